package opt

/*
#include "goggml.h"
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/life"
	"github.com/go-ggml/ggml/internal/sysmem"
)

// availableMemory is sysmem.Available; tests replace it.
var availableMemory = sysmem.Available

// poolAlign is the alignment of a context's pool (ggml asserts
// GGML_MEM_ALIGN; ggml_aligned_malloc's is 64).
const poolAlign = 64

// newCContext makes a NoAlloc C context of size bytes whose pool go-ggml
// allocates and lends to ggml (mem_buffer), as ggml.NewContext does: a pool
// that cannot be allocated, or larger than the machine's memory, is
// ErrNoMemory, where ggml_init would assert. Free the context, then the
// pool.
func newCContext(size uint64) (*C.struct_ggml_context, unsafe.Pointer, error) {
	if size > 1<<62 {
		return nil, nil, fmt.Errorf("%w: a context of %d bytes", ggml.ErrNoMemory, size)
	}
	size = (size + poolAlign - 1) / poolAlign * poolAlign
	if avail, known := availableMemory(); known && size > avail {
		return nil, nil, fmt.Errorf("%w: a context of %d bytes, %d are available", ggml.ErrNoMemory, size, avail)
	}
	pool := C.aligned_alloc(poolAlign, C.size_t(size))
	if pool == nil {
		return nil, nil, fmt.Errorf("%w: cannot allocate a context of %d bytes", ggml.ErrNoMemory, size)
	}
	var c *C.struct_ggml_context
	err := func() (err error) {
		defer life.Catch(&err)
		c = C.ggml_init(C.struct_ggml_init_params{mem_size: C.size_t(size), mem_buffer: pool, no_alloc: true})
		return nil
	}()
	if err == nil && c == nil {
		err = fmt.Errorf("%w: ggml_init of a context of %d bytes failed", ggml.ErrNoMemory, size)
	}
	if err != nil {
		C.free(pool)
		return nil, nil, err
	}
	return c, pool, nil
}
