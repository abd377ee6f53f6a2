package gguf_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/testutil"
)

// Weights placed in the CPU's extra buffer types (repacked, AMX) by
// llama.cpp's rule load whole, from the mapping or from the file, with
// Progress counting them, and compute the same products as the weights in
// the CPU's own buffer, against float64.
func TestLoadExtraBufferTypes(t *testing.T) {
	dev, err := backend.DeviceByType(backend.DeviceCPU)
	require.NoError(t, err)
	extra, err := dev.ExtraBufferTypes()
	require.NoError(t, err)
	if len(extra) == 0 {
		t.Skip("the CPU device has no extra buffer types in this build")
	}
	rng := newRNG(t)
	const k, n = 2048, 64
	type weight struct {
		name string
		typ  ggml.Type
		w    []float32
	}
	var ws []weight
	var specs []spec
	// q4_0, q8_0, q4_K and f16 go to AMX where there is AMX; elsewhere
	// q4_0 and q4_K to CPU_REPACK, the others to the CPU's own type. The
	// f16 one is larger than one load chunk (8 MiB).
	for _, typ := range []ggml.Type{ggml.TypeQ4_0, ggml.TypeQ8_0, ggml.TypeQ4_K, ggml.TypeF16} {
		rows := int64(n)
		if typ == ggml.TypeF16 {
			rows = 2304 // 9 MiB
		}
		w := testutil.RandF32(rng, int(k*rows))
		q, err := ggml.Quantize(typ, w, k, nil)
		require.NoError(t, err)
		deq, err := ggml.Dequantize(typ, q)
		require.NoError(t, err)
		name := "w." + typ.String()
		ws = append(ws, weight{name, typ, deq})
		specs = append(specs, spec{name, typ, []int64{k, rows}, q})
	}
	path := writeTemp(t, build(t, nil, specs))
	be := backendtest.CPU(t)
	x := testutil.RandF32(rng, k*3)

	for _, noMmap := range []bool{false, true} {
		f, err := gguf.Open(path)
		require.NoError(t, err)
		placed := map[string]string{}
		var last [2]uint64
		model, err := gguf.Load(context.Background(), f, gguf.LoadOptions{
			NoMmap: noMmap,
			BufferType: func(ti gguf.TensorInfo) *backend.BufferType {
				c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 3, NoAlloc: true})
				require.NoError(t, err)
				defer c.Close()
				op := c.MulMat(c.NewTensor(ti.Type, ti.Shape...), c.NewTensor(ggml.TypeF32, ti.Shape[0], 512))
				bt, err := dev.WeightBufferType(0, op)
				require.NoError(t, err)
				placed[ti.Name] = bt.Name()
				return bt
			},
			Progress: func(done, total uint64) { last = [2]uint64{done, total} },
		})
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.Equal(t, last[0], last[1])
		require.Equal(t, totalSize(specs), last[1])
		t.Logf("NoMmap %v: %v", noMmap, placed)
		require.True(t, backend.CPUBufferType().Name() != placed["w.q4_0"], "q4_0 %dx%d: AMX or CPU_REPACK take it", k, n)

		for _, w := range ws {
			wt := model.Tensor(w.name)
			rows := wt.Shape()[1]
			got := mulMat(t, be, wt, x, 3)
			for j := range int64(3) {
				for i := range rows {
					ref, bound := testutil.Q8Dot(w.w[i*k:(i+1)*k], x[j*k:(j+1)*k])
					require.InDelta(t, ref, got[j*rows+i], bound, "%s in %s: y[%d][%d]", w.name, placed[w.name], j, i)
				}
			}
		}
		{
			_, err := ggml.Bytes(model.Tensor("w.q4_0"))
			require.ErrorIs(t, err, backend.ErrUnsupported, "a repacked weight cannot be read back")
		}
		require.NoError(t, model.Close())
	}
}
