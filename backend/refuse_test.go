package backend_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// On lavapipe the binding refuses exactly the mul_mat nodes that read an
// im2col (through views): the convolutions built from im2col and mul_mat.
func TestLavapipeRefusesMulMatOfIm2Col(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 32, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	k := c.NewTensor(ggml.TypeF32, 3, 3, 2, 4)
	x := c.NewTensor(ggml.TypeF32, 8, 7, 2, 1)
	conv := c.Conv2D(k, x, 1, 1, 1, 1, 1, 1)
	require.NoError(t, conv.Err())
	// conv is cont(permute(reshape(mul_mat(reshape(im2col), reshape(k))))).
	mm := conv
	for mm != nil && mm.Op() != "MUL_MAT" && len(mm.Sources()) > 0 {
		mm = mm.Sources()[0]
	}
	require.Equal(t, "MUL_MAT", mm.Op(), "Conv2D builds a mul_mat")
	err = backend.LavapipeRefusal(mm)
	require.ErrorIs(t, err, backend.ErrUnsupported)
	assert.Contains(t, err.Error(), "lavapipe")
	assert.Contains(t, err.Error(), "im2col")

	// The same mul_mat of plain tensors, the im2col alone, the cont after
	// the product and the direct convolution are not refused.
	a := c.NewTensor(ggml.TypeF32, 18, 56)
	b := c.NewTensor(ggml.TypeF32, 18, 4)
	assert.NoError(t, backend.LavapipeRefusal(c.MulMat(a, b)))
	assert.NoError(t, backend.LavapipeRefusal(c.Im2Col(k, x, 1, 1, 1, 1, 1, 1, true, ggml.TypeF32)))
	assert.NoError(t, backend.LavapipeRefusal(conv))
	assert.NoError(t, backend.LavapipeRefusal(c.Conv2DDirect(k, x, 1, 1, 1, 1, 1, 1)))
	// An im2col as the second operand is refused too.
	im := c.Im2Col(k, x, 1, 1, 1, 1, 1, 1, true, ggml.TypeF32)
	require.ErrorIs(t, backend.LavapipeRefusal(c.MulMat(c.Reshape(k, 18, 4), c.Reshape(im, 18, 56))), backend.ErrUnsupported)
}
