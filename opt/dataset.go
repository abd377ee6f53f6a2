package opt

/*
#include "goggml.h"
#include "goggml/fwd-ggml-opt.h"
#include <stdlib.h>

// goggml_opt_batch copies batch ibatch of the dataset, per_batch shards in
// the order of perm (shard indices), into data and, unless NULL, labels;
// nb_data and nb_labels are a shard's bytes.
static void goggml_opt_batch(ggml_opt_dataset_t ds, const int64_t *perm, int64_t per_batch, int64_t ibatch,
		size_t nb_data, size_t nb_labels, struct ggml_tensor *data, struct ggml_tensor *labels) {
	const char *d = (const char *)ggml_opt_dataset_data(ds)->data;
	const char *l = labels ? (const char *)ggml_opt_dataset_labels(ds)->data : NULL;
	for (int64_t j = 0; j < per_batch; j++) {
		const int64_t k = perm[ibatch*per_batch + j];
		ggml_backend_tensor_set(data, d + k*nb_data, j*nb_data, nb_data);
		if (labels) {
			ggml_backend_tensor_set(labels, l + k*nb_labels, j*nb_labels, nb_labels);
		}
	}
}

// goggml_opt_try_malloc is malloc, which may return NULL: cgo's C.malloc
// ends the process instead.
static void *goggml_opt_try_malloc(size_t n) { return malloc(n); }
*/
import "C"

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/life"
)

// Dataset is ggml-opt's dataset (ggml_opt_dataset_t): n datapoints of f32
// values, each with an optional label, in C memory, read in batches of
// whole shards (the unit of shuffling; 1 datapoint is fine, more is
// faster).
//
// Shuffling is go-ggml's own, from a seed: ggml_opt_dataset_shuffle draws
// from an optimization context's std::mt19937, whose seed ggml does not let
// anyone set (every context starts from the same default state). So the
// order of batches is go-ggml's permutation of the shards, which ggml's
// dataset does not see; ggml_opt_dataset_get_batch's copy is done by a C
// loop of go-ggml over that permutation.
//
// A Dataset is used by one goroutine at a time, or by several that only
// read it (epochs). Close frees it; an unreachable Dataset is freed by the
// garbage collector.
type Dataset struct {
	_        life.NoCopy
	c        C.ggml_opt_dataset_t
	life     *life.Life
	perm     *C.int64_t // the shard order, C memory of nshards entries
	n        int64
	dataLen  int64
	labelLen int64
	shard    int64
	cleanup  runtime.Cleanup
}

type datasetRes struct {
	c    C.ggml_opt_dataset_t
	perm *C.int64_t
}

func (r datasetRes) free() {
	C.ggml_opt_dataset_free(r.c)
	C.free(unsafe.Pointer(r.perm))
}

// NewDataset creates a dataset of n datapoints of dataLen f32 values, each
// with a label of labelLen f32 values (0: no labels), shuffled in shards
// of shard datapoints (ggml_opt_dataset_init with GGML_TYPE_F32). n must
// be a multiple of shard. The values are zero until SetData, SetLabels or
// Fill. A dataset larger than the machine's memory, or than the process
// can allocate, is ErrNoMemory.
func NewDataset(n, dataLen, labelLen, shard int) (*Dataset, error) {
	switch {
	case n <= 0 || dataLen <= 0 || labelLen < 0 || shard <= 0:
		return nil, fmt.Errorf("%w: opt.NewDataset: n %d, dataLen %d and shard %d must be positive, labelLen %d not negative", ggml.ErrInvalid, n, dataLen, shard, labelLen)
	case n%shard != 0:
		return nil, fmt.Errorf("%w: opt.NewDataset: %d datapoints are not a whole number of shards of %d", ggml.ErrInvalid, n, shard)
	}
	// Both tensors live in one CPU buffer; their sizes must not overflow.
	hi, values := mul64(uint64(n), uint64(dataLen)+uint64(labelLen))
	if hi != 0 || values > math.MaxInt64/4 {
		return nil, fmt.Errorf("%w: opt.NewDataset: %d datapoints of %d+%d values", ggml.ErrNoMemory, n, dataLen, labelLen)
	}
	// ggml_opt_dataset_init allocates the buffer, whose failure is a NULL
	// buffer, and then a std::vector of one int64 per shard, whose failure
	// is a std::bad_alloc that nothing catches: the process aborts. go-ggml
	// keeps a permutation of its own of the same size. All of it must fit
	// the machine's memory, and is tried first: go-ggml's permutation is
	// allocated, and what ggml will allocate is allocated once and freed.
	nshards := uint64(n / shard)
	dataBytes, permBytes := values*4, nshards*8 // values <= MaxInt64/4, nshards <= MaxInt64
	need := dataBytes + 2*permBytes + 2*uint64(C.ggml_tensor_overhead()) + 4*poolAlign
	if nshards > math.MaxInt64/32 || need > math.MaxInt64 {
		return nil, fmt.Errorf("%w: opt.NewDataset: %d datapoints of %d+%d values in %d shards", ggml.ErrNoMemory, n, dataLen, labelLen, nshards)
	}
	if avail, known := availableMemory(); known && need > avail {
		return nil, fmt.Errorf("%w: opt.NewDataset: %d datapoints of %d+%d values in %d shards take %d bytes, %d are available", ggml.ErrNoMemory, n, dataLen, labelLen, nshards, need, avail)
	}
	perm := (*C.int64_t)(C.goggml_opt_try_malloc(C.size_t(permBytes)))
	if perm == nil {
		return nil, fmt.Errorf("%w: opt.NewDataset: the order of %d shards (%d bytes)", ggml.ErrNoMemory, nshards, permBytes)
	}
	probe := C.goggml_opt_try_malloc(C.size_t(need - permBytes))
	if probe == nil {
		C.free(unsafe.Pointer(perm))
		return nil, fmt.Errorf("%w: opt.NewDataset: %d datapoints of %d+%d values in %d shards (%d bytes)", ggml.ErrNoMemory, n, dataLen, labelLen, nshards, need)
	}
	C.free(probe)
	var c C.ggml_opt_dataset_t
	err := func() (err error) {
		defer life.Catch(&err)
		c = C.ggml_opt_dataset_init(C.GGML_TYPE_F32, C.GGML_TYPE_F32, C.int64_t(dataLen), C.int64_t(labelLen), C.int64_t(n), C.int64_t(shard))
		return nil
	}()
	if err != nil {
		C.free(unsafe.Pointer(perm))
		return nil, fmt.Errorf("opt.NewDataset: %w", err)
	}
	if c == nil || C.ggml_opt_dataset_data(c).data == nil {
		if c != nil {
			C.ggml_opt_dataset_free(c)
		}
		C.free(unsafe.Pointer(perm))
		return nil, fmt.Errorf("%w: opt.NewDataset: %d datapoints of %d+%d f32 values", ggml.ErrNoMemory, n, dataLen, labelLen)
	}
	for i := range unsafe.Slice(perm, nshards) {
		unsafe.Slice(perm, nshards)[i] = C.int64_t(i)
	}
	d := &Dataset{c: c, perm: perm, n: int64(n), dataLen: int64(dataLen), labelLen: int64(labelLen), shard: int64(shard)}
	res := datasetRes{c: c, perm: perm}
	d.life = life.New(nil, fmt.Errorf("%w: the dataset is closed", ggml.ErrClosed), res.free)
	d.cleanup = runtime.AddCleanup(d, life.CloseCollected, d.life)
	life.Leaks.Opened("Dataset", d.life)
	return d, nil
}

func mul64(a, b uint64) (hi, lo uint64) {
	if a == 0 || b == 0 {
		return 0, 0
	}
	lo = a * b
	if lo/b != a {
		return 1, lo
	}
	return 0, lo
}

// NewDatasetFrom creates a dataset of data's datapoints, dataLen values
// each, with labels (labelLen values per datapoint, or nil labels and
// labelLen 0), shuffled in shards of one datapoint (ggml_opt_dataset_init,
// then a copy into ggml_opt_dataset_data's and _labels' tensors).
func NewDatasetFrom(data []float32, dataLen int, labels []float32, labelLen int) (*Dataset, error) {
	if dataLen <= 0 || len(data) == 0 || len(data)%dataLen != 0 {
		return nil, fmt.Errorf("%w: opt.NewDatasetFrom: %d values are not datapoints of %d", ggml.ErrShape, len(data), dataLen)
	}
	n := len(data) / dataLen
	if len(labels) != n*labelLen {
		return nil, fmt.Errorf("%w: opt.NewDatasetFrom: %d datapoints need %d label values of %d each, got %d", ggml.ErrShape, n, n*labelLen, labelLen, len(labels))
	}
	d, err := NewDataset(n, dataLen, labelLen, 1)
	if err != nil {
		return nil, err
	}
	if err := d.SetData(data); err != nil {
		d.Close()
		return nil, err
	}
	if labelLen > 0 {
		if err := d.SetLabels(labels); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

// Close frees the dataset (ggml_opt_dataset_free). It is idempotent and
// safe on nil; while an epoch reads it, it returns ErrBusy.
func (d *Dataset) Close() error {
	if d == nil || d.life == nil || d.life.Closed() {
		return nil
	}
	if err := d.life.Close("the dataset", true); err != nil {
		return err
	}
	d.cleanup.Stop()
	life.Leaks.Closed(d.life)
	return nil
}

// Len returns the number of datapoints (ggml_opt_dataset_ndata).
func (d *Dataset) Len() int {
	if d == nil {
		return 0
	}
	return int(d.n)
}

// DataLen returns the values per datapoint.
func (d *Dataset) DataLen() int {
	if d == nil {
		return 0
	}
	return int(d.dataLen)
}

// LabelLen returns the values per label (0: no labels).
func (d *Dataset) LabelLen() int {
	if d == nil {
		return 0
	}
	return int(d.labelLen)
}

// ShardSize returns the datapoints per shard.
func (d *Dataset) ShardSize() int {
	if d == nil {
		return 0
	}
	return int(d.shard)
}

// acquire starts a use of the dataset's memory; release it with
// d.life.Release.
func (d *Dataset) acquire() error {
	if d == nil {
		return fmt.Errorf("%w: nil *opt.Dataset", ggml.ErrInvalid)
	}
	if d.life == nil {
		return fmt.Errorf("%w: a zero opt.Dataset: make one with opt.NewDataset", ggml.ErrInvalid)
	}
	return d.life.Acquire()
}

// view returns the C memory of the data (labels false) or labels tensor
// (ggml_opt_dataset_data, ggml_opt_dataset_labels) as a slice.
func (d *Dataset) view(labels bool) []float32 {
	t := C.ggml_opt_dataset_data(d.c)
	n := d.n * d.dataLen
	if labels {
		t = C.ggml_opt_dataset_labels(d.c)
		n = d.n * d.labelLen
	}
	return unsafe.Slice((*float32)(t.data), n)
}

// SetData copies all datapoints, dataLen values each, one after another,
// into the dataset (ggml_opt_dataset_data's tensor).
func (d *Dataset) SetData(data []float32) error { return d.set(false, data) }

// SetLabels copies all labels, labelLen values each, into the dataset
// (ggml_opt_dataset_labels' tensor).
func (d *Dataset) SetLabels(labels []float32) error { return d.set(true, labels) }

func (d *Dataset) set(labels bool, src []float32) error {
	if err := d.acquire(); err != nil {
		return err
	}
	defer d.life.Release()
	what, n := "data", d.n*d.dataLen
	if labels {
		what, n = "labels", d.n*d.labelLen
		if d.labelLen == 0 {
			return fmt.Errorf("%w: the dataset has no labels (labelLen 0)", ggml.ErrInvalid)
		}
	}
	if int64(len(src)) != n {
		return fmt.Errorf("%w: the dataset's %s are %d values, got %d", ggml.ErrShape, what, n, len(src))
	}
	copy(d.view(labels), src)
	runtime.KeepAlive(d)
	return nil
}

// Data returns a copy of the datapoints (ggml_opt_dataset_data's tensor).
func (d *Dataset) Data() ([]float32, error) { return d.get(false) }

// Labels returns a copy of the labels (ggml_opt_dataset_labels' tensor).
func (d *Dataset) Labels() ([]float32, error) { return d.get(true) }

func (d *Dataset) get(labels bool) ([]float32, error) {
	if err := d.acquire(); err != nil {
		return nil, err
	}
	defer d.life.Release()
	out := append([]float32(nil), d.view(labels)...)
	runtime.KeepAlive(d)
	return out, nil
}

// Fill sets each datapoint and its label from fn, called for i from 0 to
// Len()-1 with slices of the dataset's own memory to write (the tensors of
// ggml_opt_dataset_data and ggml_opt_dataset_labels) (label is empty
// without labels): for data made on the fly, or too large for one Go
// slice beside the copy. An error from fn stops it and is returned.
func (d *Dataset) Fill(fn func(i int, data, label []float32) error) error {
	if err := d.acquire(); err != nil {
		return err
	}
	defer d.life.Release()
	if fn == nil {
		return fmt.Errorf("%w: Dataset.Fill: nil function", ggml.ErrInvalid)
	}
	data := d.view(false)
	var labels []float32
	if d.labelLen > 0 {
		labels = d.view(true)
	}
	for i := range d.n {
		lab := []float32{}
		if d.labelLen > 0 {
			lab = labels[i*d.labelLen : (i+1)*d.labelLen : (i+1)*d.labelLen]
		}
		if err := fn(int(i), data[i*d.dataLen:(i+1)*d.dataLen:(i+1)*d.dataLen], lab); err != nil {
			return err
		}
	}
	runtime.KeepAlive(d)
	return nil
}

// Shuffle puts the first n datapoints (all for n < 0) in an order drawn
// from seed (a PCG of math/rand/v2), shard by shard; the datapoints after
// n keep their place (ggml_opt_dataset_shuffle's contract, with go-ggml's
// generator: see Dataset). n must be a multiple of the shard size. The same
// seed on the same order gives the same order.
func (d *Dataset) Shuffle(seed uint64, n int) error {
	if err := d.acquire(); err != nil {
		return err
	}
	defer d.life.Release()
	return d.shuffle(rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), n)
}

func (d *Dataset) shuffle(rng *rand.Rand, n int) error {
	if n < 0 {
		n = int(d.n)
	}
	if int64(n) > d.n || int64(n)%d.shard != 0 {
		return fmt.Errorf("%w: Dataset.Shuffle: %d datapoints are not a whole number of shards of %d among the first %d", ggml.ErrInvalid, n, d.shard, d.n)
	}
	p := unsafe.Slice(d.perm, d.n/d.shard)[:int64(n)/d.shard]
	rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	runtime.KeepAlive(d)
	return nil
}

// Order returns the datapoints' order: entry i is the index of the
// datapoint that batches read at position i.
func (d *Dataset) Order() ([]int, error) {
	if err := d.acquire(); err != nil {
		return nil, err
	}
	defer d.life.Release()
	out := make([]int, 0, d.n)
	for _, s := range unsafe.Slice(d.perm, d.n/d.shard) {
		for j := range d.shard {
			out = append(out, int(int64(s)*d.shard+j))
		}
	}
	runtime.KeepAlive(d)
	return out, nil
}

// batch copies batch ib (batch datapoints) into inputs and, unless nil,
// labels, in the dataset's order.
func (d *Dataset) batch(inputs, labels *C.struct_ggml_tensor, batch, ib int64) {
	nbData := C.size_t(d.shard * d.dataLen * 4)
	nbLabels := C.size_t(d.shard * d.labelLen * 4)
	C.goggml_opt_batch(d.c, d.perm, C.int64_t(batch/d.shard), C.int64_t(ib), nbData, nbLabels, inputs, labels)
}
