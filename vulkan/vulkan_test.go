//go:build vulkan && cgo

package vulkan_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/sched"
	"github.com/go-ggml/ggml/vulkan"
)

func vk(t *testing.T) *backend.Backend {
	t.Helper()
	if vulkan.DeviceCount() == 0 {
		t.Skip("no Vulkan device (for Mesa's software driver set GGML_VK_VISIBLE_DEVICES=0)")
	}
	be, err := vulkan.Init(0)
	require.NoError(t, err)
	t.Cleanup(func() { be.Close() })
	return be
}

func TestDevice(t *testing.T) {
	be := vk(t)
	require.True(t, vulkan.Built)
	assert.True(t, vulkan.IsVulkan(be))
	cpu, err := backend.InitByName("CPU", "")
	require.NoError(t, err)
	defer cpu.Close()
	assert.False(t, vulkan.IsVulkan(cpu))
	desc, err := vulkan.Description(0)
	require.NoError(t, err)
	assert.NotEmpty(t, desc)
	free, total, err := vulkan.Memory(0)
	require.NoError(t, err)
	assert.Positive(t, total)
	assert.LessOrEqual(t, free, total)
	p, err := be.Device().Props()
	require.NoError(t, err)
	assert.Equal(t, total, p.MemoryTotal)
	bt, err := vulkan.BufferType(0)
	require.NoError(t, err)
	assert.False(t, bt.IsHost())
	assert.True(t, be.SupportsBufferType(bt))
	_, err = vulkan.Description(vulkan.DeviceCount())
	require.ErrorIs(t, err, ggml.ErrInvalid)
	if hbt, err := vulkan.HostBufferType(); err == nil {
		assert.True(t, hbt.IsHost())
	}
}

// Each op gives on Vulkan what it gives on the CPU (ops Vulkan lacks are
// skipped).
func TestOpsMatchCPU(t *testing.T) {
	gpu := vk(t)
	cpu, err := backend.InitByName("CPU", "")
	require.NoError(t, err)
	defer cpu.Close()
	rng := testutil.NewRNG(t) // GOGGML_SEED replays a run
	type build func(c *ggml.Context, a, b *ggml.Tensor) *ggml.Tensor
	ops := []struct {
		name   string
		an, bn []int64
		f      build
	}{
		{"add", []int64{16, 4, 2}, []int64{16, 1, 2}, (*ggml.Context).Add},
		{"sub", []int64{16, 4}, []int64{16, 4}, (*ggml.Context).Sub},
		{"mul", []int64{16, 4}, []int64{16}, (*ggml.Context).Mul},
		{"div", []int64{16, 4}, []int64{16, 4}, (*ggml.Context).Div},
		{"scale", []int64{16, 4}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Scale(a, 0.75) }},
		{"mul_mat", []int64{32, 8}, []int64{32, 5}, (*ggml.Context).MulMat},
		{"relu", []int64{64}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Relu(a) }},
		{"gelu", []int64{64}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Gelu(a) }},
		{"silu", []int64{64}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Silu(a) }},
		{"soft_max", []int64{16, 4}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.SoftMax(a) }},
		{"sum_rows", []int64{16, 4}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.SumRows(a) }},
		{"cont(permute)", []int64{4, 3, 2, 2}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Cont(c.Permute(a, 2, 0, 3, 1)) }},
		{"cont(transpose)", []int64{5, 3}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Cont(c.Transpose(a)) }},
		{"rms_norm", []int64{64, 3}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.RMSNorm(a, 1e-5) }},
		{"norm", []int64{64, 3}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Norm(a, 1e-5) }},
		{"mean", []int64{16, 4}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Mean(a) }},
		{"tanh", []int64{64}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Tanh(a) }},
		{"exp", []int64{64}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Exp(a) }},
		{"repeat", []int64{4, 2}, []int64{8, 4, 2}, (*ggml.Context).Repeat},
		{"concat", []int64{4, 2}, []int64{4, 3}, func(c *ggml.Context, a, b *ggml.Tensor) *ggml.Tensor { return c.Concat(a, b, 1) }},
		// The rest of the op set, where Vulkan has the op (else skipped).
		{"clamp", []int64{64}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Clamp(a, -0.5, 0.5) }},
		{"leaky_relu", []int64{64}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.LeakyRelu(a, 0.1) }},
		{"sqr", []int64{64}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Sqr(a) }},
		{"sin", []int64{64}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Sin(a) }},
		{"l2_norm", []int64{64, 3}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.L2Norm(a, 1e-6) }},
		{"group_norm", []int64{4, 4, 6}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.GroupNorm(a, 3, 1e-5) }},
		{"cumsum", []int64{16, 4}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Cumsum(a) }},
		{"pad_ext", []int64{5, 3}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor {
			return c.PadExt(a, ggml.Padding{{1, 2}, {0, 1}})
		}},
		{"roll", []int64{5, 3, 2}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Roll(a, 2, -1, 1, 0) }},
		{"repeat_4d", []int64{4, 2}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Repeat4D(a, 8, 4, 2, 1) }},
		{"soft_max_ext", []int64{16, 4}, []int64{16, 4}, func(c *ggml.Context, a, b *ggml.Tensor) *ggml.Tensor { return c.SoftMaxExt(a, b, 0.5, 0) }},
		{"swiglu_oai", []int64{16, 4}, []int64{16, 4}, func(c *ggml.Context, a, b *ggml.Tensor) *ggml.Tensor { return c.SwigluOAI(a, b, 1.702, 2) }},
		{"out_prod", []int64{8, 5}, []int64{6, 5}, (*ggml.Context).OutProd},
		{"acc", []int64{16, 4}, []int64{4, 2}, func(c *ggml.Context, a, b *ggml.Tensor) *ggml.Tensor {
			return c.Acc(a, b, a.Nb()[1], a.Nb()[2], a.Nb()[3], 8)
		}},
		// Not conv_2d (im2col + mul_mat): on Mesa's lavapipe, where this test
		// runs in CI, the binding refuses it (a ggml-vulkan and lavapipe bug
		// that corrupts the heap: see TestConvRefusedOnLavapipe and the
		// package doc), and the comparison skips only ops ggml lacks.
		// conv_2d_direct below is Vulkan's convolution.
		{"conv_2d_direct", []int64{3, 3, 2, 4}, []int64{8, 7, 2, 1}, func(c *ggml.Context, a, b *ggml.Tensor) *ggml.Tensor {
			return c.Conv2DDirect(a, b, 2, 1, 0, 1, 1, 1)
		}},
		{"pool_2d", []int64{8, 6, 2}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor {
			return c.Pool2D(a, ggml.PoolAvg, 2, 2, 2, 2, 0, 0)
		}},
		{"upscale", []int64{4, 3, 2}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Upscale(a, 2, ggml.ScaleNearest) }},
		{"interpolate bilinear", []int64{4, 3, 2}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor {
			return c.Interpolate(a, 7, 5, 2, 1, ggml.ScaleBilinear)
		}},
		{"timestep_embedding", []int64{5}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.TimestepEmbedding(a, 16, 10000) }},
		{"tri", []int64{5, 5, 2}, nil, func(c *ggml.Context, a, _ *ggml.Tensor) *ggml.Tensor { return c.Tri(a, ggml.TriLowerDiag) }},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			n := func(ne []int64) int {
				p := int64(1)
				for _, v := range ne {
					p *= v
				}
				return int(p)
			}
			av := make([]float32, n(op.an))
			for i := range av {
				av[i] = float32(rng.NormFloat64())
			}
			var bv []float32
			if op.bn != nil {
				bv = make([]float32, n(op.bn))
				for i := range bv {
					bv[i] = float32(0.5 + math.Abs(rng.NormFloat64()))
				}
			}
			run := func(be *backend.Backend) []float32 {
				c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true, Graph: true})
				require.NoError(t, err)
				defer c.Close()
				a := c.NewTensor(ggml.TypeF32, op.an...)
				var b *ggml.Tensor
				if op.bn != nil {
					b = c.NewTensor(ggml.TypeF32, op.bn...)
				}
				y := op.f(c, a, b)
				g, err := c.BuildGraph(y)
				require.NoError(t, err)
				if !be.SupportsOp(y) {
					t.Skipf("%s does not support %s", be.Name(), op.name)
				}
				buf, err := backend.AllocContextTensors(c, be)
				require.NoError(t, err)
				defer buf.Close()
				require.NoError(t, ggml.SetData(a, av))
				if b != nil {
					require.NoError(t, ggml.SetData(b, bv))
				}
				require.NoError(t, be.Compute(context.Background(), g))
				out, err := ggml.Data[float32](y)
				require.NoError(t, err)
				return out
			}
			want, got := run(cpu), run(gpu)
			require.Len(t, got, len(want))
			for i := range want {
				// Vulkan may compute in f16 (relative error ~5e-4).
				tol := 2e-3 * math.Max(1, math.Abs(float64(want[i])))
				require.InDelta(t, want[i], got[i], tol, fmt.Sprintf("%s element %d", op.name, i))
			}
		})
	}
}

// On lavapipe a mul_mat of an im2col (Conv2D and the other im2col
// convolutions) is refused: Backend.Compute, SupportsOp and a scheduler
// say ErrUnsupported instead of corrupting the heap. Conv2DDirect and the
// im2col alone still compute.
func TestConvRefusedOnLavapipe(t *testing.T) {
	gpu := vk(t)
	desc, err := vulkan.Description(0)
	require.NoError(t, err)
	if !strings.Contains(strings.ToLower(desc), "llvmpipe") {
		t.Skipf("device 0 is %q, not lavapipe", desc)
	}
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 32, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	k := c.NewTensor(ggml.TypeF32, 3, 3, 2, 4)
	x := c.NewTensor(ggml.TypeF32, 8, 7, 2, 1)
	y := c.Conv2D(k, x, 1, 1, 1, 1, 1, 1)
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, gpu)
	require.NoError(t, err)
	defer buf.Close()
	var mm *ggml.Tensor
	for _, n := range g.Nodes() {
		if n.Op() == "MUL_MAT" {
			mm = n
		}
	}
	require.NotNil(t, mm)
	assert.False(t, gpu.SupportsOp(mm))
	assert.False(t, gpu.Device().SupportsOp(mm))
	err = gpu.Compute(context.Background(), g)
	require.ErrorIs(t, err, backend.ErrUnsupported)
	assert.Contains(t, err.Error(), "lavapipe")

	// Through a scheduler that puts the convolution on lavapipe.
	cpu, err := backend.InitByName("CPU", "")
	require.NoError(t, err)
	defer cpu.Close()
	s, err := sched.New([]*backend.Backend{gpu, cpu}, sched.Options{})
	require.NoError(t, err)
	defer s.Close()
	c2, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 32, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c2.Close()
	k2 := c2.NewTensor(ggml.TypeF32, 3, 3, 2, 4)
	x2 := c2.NewTensor(ggml.TypeF32, 8, 7, 2, 1)
	g2, err := c2.BuildGraph(c2.Conv2D(k2, x2, 1, 1, 1, 1, 1, 1))
	require.NoError(t, err)
	buf2, err := backend.AllocContextTensors(c2, gpu)
	require.NoError(t, err)
	defer buf2.Close()
	require.NoError(t, s.AllocGraph(g2))
	err = s.Compute(context.Background(), g2)
	require.ErrorIs(t, err, backend.ErrUnsupported)
	assert.Contains(t, err.Error(), "lavapipe")

	// The direct convolution and the im2col alone are not refused.
	for _, f := range []func(c *ggml.Context, k, x *ggml.Tensor) *ggml.Tensor{
		func(c *ggml.Context, k, x *ggml.Tensor) *ggml.Tensor { return c.Conv2DDirect(k, x, 1, 1, 1, 1, 1, 1) },
		func(c *ggml.Context, k, x *ggml.Tensor) *ggml.Tensor {
			return c.Im2Col(k, x, 1, 1, 1, 1, 1, 1, true, ggml.TypeF32)
		},
	} {
		c3, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
		require.NoError(t, err)
		y3 := f(c3, c3.NewTensor(ggml.TypeF32, 3, 3, 2, 4), c3.NewTensor(ggml.TypeF32, 8, 7, 2, 1))
		g3, err := c3.BuildGraph(y3)
		require.NoError(t, err)
		buf3, err := backend.AllocContextTensors(c3, gpu)
		require.NoError(t, err)
		require.NoError(t, buf3.Clear(0))
		assert.True(t, gpu.SupportsOp(y3), y3.Op())
		require.NoError(t, gpu.Compute(context.Background(), g3), y3.Op())
		require.NoError(t, buf3.Close())
		require.NoError(t, c3.Close())
	}
}

// Async copies between Vulkan and the CPU, and events on the Vulkan device.
func TestTransfersAndEvents(t *testing.T) {
	gpu := vk(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	x := c.NewTensor(ggml.TypeF32, 256)
	buf, err := backend.AllocContextTensors(c, gpu)
	require.NoError(t, err)
	defer buf.Close()
	data := make([]byte, 1024)
	for i := range data {
		data[i] = byte(i * 7)
	}
	require.NoError(t, gpu.SetTensorAsync(x, data, 0))
	if p, _ := gpu.Device().Props(); p.Caps.Events {
		e, err := gpu.Device().NewEvent()
		require.NoError(t, err)
		defer e.Close()
		require.NoError(t, e.Record(gpu))
		require.NoError(t, e.Synchronize())
	}
	require.NoError(t, gpu.Synchronize())
	got := make([]byte, 1024)
	require.NoError(t, gpu.GetTensorAsync(x, got, 0))
	require.NoError(t, gpu.Synchronize())
	require.Equal(t, data, got)
	_, err = buf.Base()
	require.ErrorIs(t, err, backend.ErrUnsupported, "device memory has no host address")
}
