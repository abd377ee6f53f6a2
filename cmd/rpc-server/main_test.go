package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/rpc"
)

// argsEnv makes the test binary run the command with these arguments
// (JSON) instead of the tests: the tests start the server as a child.
const argsEnv = "GOGGML_RPC_SERVER_TEST_ARGS"

func TestMain(m *testing.M) {
	if js := os.Getenv(argsEnv); js != "" {
		var args []string
		if err := json.Unmarshal([]byte(js), &args); err != nil {
			panic(err)
		}
		os.Exit(run(args, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestListDevices(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"-list-devices"}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "CPU")
}

func TestBadFlags(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 2, run([]string{"-port", "x"}, &out, &errb))
	assert.Equal(t, 2, run([]string{"extra"}, &out, &errb))
	assert.Equal(t, 2, run([]string{"-lifetime", "-1s"}, &out, &errb))
	// -h says what the command is, and that it needs upstream ggml.
	errb.Reset()
	assert.Equal(t, 0, run([]string{"-h"}, &out, &errb))
	assert.Contains(t, errb.String(), "serves this machine's devices")
	assert.Contains(t, errb.String(), "-tags ggml_system")
	assert.Contains(t, errb.String(), "-devices")
	// What Serve refuses before it serves: it returns, and so does run.
	errb.Reset()
	assert.Equal(t, 1, run([]string{"-host", "::1"}, &out, &errb))
	if rpc.Have {
		assert.Contains(t, errb.String(), "IPv4")
		errb.Reset()
		assert.Equal(t, 1, run([]string{"-devices", "NoSuchDevice"}, &out, &errb))
		assert.Contains(t, errb.String(), "NoSuchDevice")
	} else {
		assert.Contains(t, errb.String(), "-tags ggml_system")
	}
}

// TestServe runs the command as a child on all addresses: it warns, and a
// client on 127.0.0.1 computes on it.
func TestServe(t *testing.T) {
	if !rpc.Have {
		t.Skip("needs ggml's RPC backend: build with -tags ggml_system")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	args, _ := json.Marshal([]string{"-host", "0.0.0.0", "-port", strconv.Itoa(port), "-threads", "1", "-lifetime", "2m"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), argsEnv+"="+string(args))
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// The warning comes first, before the server listens.
	sc := bufio.NewScanner(stderr)
	var warned bool
	for i := 0; i < 10 && sc.Scan(); i++ {
		if strings.Contains(sc.Text(), "NO authentication") {
			warned = true
			break
		}
	}
	require.True(t, warned, "the warning about a non-loopback host")
	go func() {
		for sc.Scan() {
		}
	}()
	ep := "127.0.0.1:" + strconv.Itoa(port)
	var c *rpc.Client
	for i := 0; i < 300; i++ { // until it listens: at most 30 s
		if c, err = rpc.Connect(ep, &rpc.Options{Timeout: 5 * time.Second}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, err)
	defer c.Close()
	be, err := c.Init(0)
	require.NoError(t, err)
	defer be.Close()

	rng := testutil.NewRNG(t)
	gc, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer gc.Close()
	a := gc.NewTensor(ggml.TypeF32, 64)
	b := gc.NewTensor(ggml.TypeF32, 64)
	y := gc.Mul(a, b)
	g, err := gc.BuildGraph(y)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(gc, be)
	require.NoError(t, err)
	defer buf.Close()
	av, bv := testutil.RandF32(rng, 64), testutil.RandF32(rng, 64)
	require.NoError(t, ggml.SetData(a, av))
	require.NoError(t, ggml.SetData(b, bv))
	require.NoError(t, be.Compute(context.Background(), g))
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	for i := range av {
		assert.InDelta(t, float64(av[i])*float64(bv[i]), float64(got[i]), 1e-6)
	}
}
