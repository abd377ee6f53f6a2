// Package gguf reads, writes and loads GGUF files, the model files of the
// ggml world (llama.cpp, whisper.cpp): a header of key-value metadata and
// tensor infos, then the tensor data, aligned.
//
//	f, err := gguf.Open("model.gguf")          // reads the header, maps the file
//	defer f.Close()
//	arch, err := f.String(gguf.KeyArchitecture) // typed getters; gguf.Get[T] for any type
//	for key, v := range f.KV() { ... }          // metadata in file order
//	m, err := gguf.Load(ctx, f, gguf.LoadOptions{
//		BufferType: func(ti gguf.TensorInfo) *backend.BufferType { ... }, // nil: the CPU
//		Progress:   func(done, total uint64) { ... },
//	})
//	defer m.Close()
//	w := m.Tensor("blk.0.attn_q.weight")       // a *ggml.Tensor in a backend buffer
//
// # Reading
//
// The header is parsed in Go, by the same rules as ggml's gguf.cpp
// (gguf_init_from_file) and with the checks that ggml's parser lacks in the
// embedded provider (it predates upstream's 2026 hardening): every count
// and length is capped by the bytes left in the file before anything is
// allocated, so a few lying bytes never allocate gigabytes; sizes are
// computed with overflow checks from ggml's type traits; general.alignment
// must be a u32 power of two (ggml asserts on another type); a zero
// dimension is a tensor without data (ggml divides by zero); tensor names
// are at most ggml.MaxNameLen bytes without NUL; keys and tensor names are
// unique; tensor types must be types the linked ggml knows; every tensor's
// data must lie within the file, at a multiple of the alignment, without
// overlapping another's. A file that breaks a rule is a *FormatError
// (ErrFormat) that says at which byte, and why. Versions 2 and 3 are read,
// little-endian only. The format allows arrays of arrays, which this
// package reads and writes and ggml's reader refuses.
//
// Open maps the file into memory (private pages: writes through the
// mapping never reach the file) for zero-copy loading; Parse reads bytes in
// memory, Read any io.ReaderAt. Metadata lives in Go memory; tensor data is
// read on demand (TensorData, TensorReader).
//
// # Writing
//
// A Builder collects metadata (Set) and tensors (AddTensor, with data from
// bytes, a reader, or a tensor in a backend buffer) and writes the file as
// ggml's gguf_write_to_file does (version 3, data aligned and padded to
// general.alignment or 32), reading each tensor's data in chunks while it
// writes. ggml's reader reads what it writes, and it reads what ggml's
// writer writes (tests check both against ggml's own C code for every tensor
// type). Note that ggml's own writer ignores general.alignment: it lays
// data out with 32 whatever the key says, so a file it writes with another
// alignment is one its reader (and this one) refuses or misreads.
//
// # Loading
//
// Load makes a NoAlloc ggml.Context with every tensor of a file, places each
// tensor in the buffer type a function of the caller chooses, allocates
// one buffer per buffer type and fills it: with zero copies where the file
// is mapped, the buffer type is host memory that can be made over caller
// memory (the CPU's) and the tensor lies at an aligned place in the file;
// otherwise in chunks, across tensors in parallel, straight into host
// buffers or through a staging chunk into device buffers. It reports
// progress, stops when its context is cancelled and can check the data for
// NaN and Inf (ggml_validate_row_data). Buffers over the mapping keep it
// alive past the File's Close.
//
// # What depends on the provider
//
// The tensor types a file may use are the linked ggml's (ggml.Types): 40
// type numbers with the embedded provider, 43 with upstream v0.21.0 (which
// adds nvfp4, q1_0 and q2_0); a file with a type the linked ggml does not
// know is an ErrFormat error. With the embedded provider, a tensor of one
// of upstream's three types is one that also wraps ggml.ErrUnsupported and
// says to build with -tags ggml_system (and the Builder refuses them
// likewise). Everything else is the same with both providers: the parser
// and the writer are Go, and Load uses only calls both providers have.
//
// # Concurrency and lifetimes
//
// A File may be used by several goroutines at once, Load included. Close a
// File when done (one that is forgotten is closed by the garbage
// collector); after Close, its metadata stays readable and what reads data
// returns ErrClosed. A Model is closed with Close, which frees its context
// and buffers; its tensors keep its buffers alive.
package gguf
