package ggml_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

// TestContextUsedByTwoGoroutines: two goroutines build ops on one Context
// at once, which ggml's pool does not allow. Each op either works or
// returns ErrBusy; the tensors that exist are whole (ggml's objects do not
// overlap); the race detector (make test runs -race) sees no race.
func TestContextUsedByTwoGoroutines(t *testing.T) {
	const perG = 3000
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2*2*perG + 8, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	x := c.NewTensor(ggml.TypeF32, 4, 3)
	w := c.NewTensor(ggml.TypeF32, 4, 5)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		made []*ggml.Tensor
		busy int
	)
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []*ggml.Tensor
			nBusy := 0
			for i := range perG {
				var r *ggml.Tensor
				switch (g + i) % 4 {
				case 0:
					r = c.Add(x, x)
				case 3: // an in-place op sets what the others' room checks read
					r = c.AddInPlace(x, x)
				case 1:
					r = c.MulMat(w, x)
				default:
					r = c.NewTensor(ggml.TypeF16, 8)
				}
				if err := r.Err(); err != nil {
					assert.ErrorIs(t, err, ggml.ErrBusy)
					nBusy++
					continue
				}
				mine = append(mine, r)
			}
			mu.Lock()
			made, busy = append(made, mine...), busy+nBusy
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.NoError(t, c.Err(), "a refused op leaves the context's sticky error alone")
	t.Logf("%d ops made, %d refused with ErrBusy", len(made), busy)
	require.Len(t, c.Tensors(), len(made)+2)
	for _, r := range made {
		switch r.Op() {
		case "ADD":
			assert.Equal(t, [4]int64{4, 3, 1, 1}, r.Ne())
			assert.Equal(t, []*ggml.Tensor{x, x}, r.Sources())
		case "MUL_MAT":
			assert.Equal(t, [4]int64{5, 3, 1, 1}, r.Ne())
			assert.Equal(t, []*ggml.Tensor{w, x}, r.Sources())
		default:
			assert.Equal(t, "NONE", r.Op())
			assert.Equal(t, [4]int64{8, 1, 1, 1}, r.Ne())
			assert.Equal(t, ggml.TypeF16, r.Type())
		}
	}
	// The context still works, and its pool accounting matches ggml's.
	y := c.Add(x, x)
	require.NoError(t, y.Err())
	assert.Equal(t, c.UsedMem(), ggml.GoUsedMem(c), "the Go count of the pool and ggml's")
}

// TestContextFailingOnTwoGoroutines: two goroutines whose ops fail on one
// context at once both record the context's sticky error; the first
// recorded wins whole (the race detector, under make test's -race, sees no
// race), and every later op on the context is refused with it.
func TestContextFailingOnTwoGoroutines(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 4, 3)
	b := c.NewTensor(ggml.TypeF32, 5, 3) // a.ne0 != b.ne0: MulMat refuses
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				r := c.MulMat(a, b)
				assert.ErrorIs(t, r.Err(), ggml.ErrShape)
			}
		}()
	}
	wg.Wait()
	require.ErrorIs(t, c.Err(), ggml.ErrShape)
	assert.ErrorIs(t, c.Add(a, a).Err(), ggml.ErrShape, "the sticky error refuses what follows")
}
