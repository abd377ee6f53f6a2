// Package backend is ggml's backend API in Go: buffer types, buffers,
// backends (streams of work on a device), devices, the backend registry,
// events, graph plans, tensor placement and graph allocation, tensor
// transfer and copy.
//
//	for d := range backend.Devices() {
//		fmt.Println(d.Name(), d.Type(), d.Description())
//	}
//	be, _ := backend.InitBest()                  // a GPU if there is one, else the CPU
//	buf, _ := backend.AllocContextTensors(c, be) // a ggml context's tensors in its memory
//	be.Compute(ctx, g)                           // a ggml graph of those tensors
//
// (Example, below, is a whole program.)
//
// Calls that depend on the provider (the ggml this binary links; see
// ggml.Provider): Gallocr.AttemptedBufferSize and Device.Reset exist only in
// the embedded provider's ggml and return an ErrUnsupported error under
// -tags ggml_system, where Props' ID, driver and compute versions,
// Integrated and Library are zero. Load takes only modules built from the
// binary's own ggml.
//
// The meta device (NewMetaDevice), the RPC devices (package rpc) and the
// 2-D transfers (TensorSet2D, TensorGet2D, Backend.SetTensor2DAsync,
// Backend.GetTensor2DAsync) exist only in upstream ggml: with the embedded
// provider they return an ErrUnsupported error that names -tags
// ggml_system. Caps.Mmap is reported by upstream ggml only; with the
// embedded provider it is false.
//
// # Model
//
// A Device is a piece of hardware in ggml's registry (the CPU, a GPU); a
// Reg is the backend implementation that registered it. Both are owned by
// ggml and are safe to share. A Backend is a stream of work on one device;
// it computes graphs and moves data, one goroutine at a time. Memory lives
// in Buffers of some BufferType; tensors of a NoAlloc ggml.Context are
// placed in buffers by AllocContextTensors, TensorAlloc, a Tallocr or a
// Gallocr.
//
// # Lifetimes
//
// Backend, Buffer, Plan, Event, Gallocr, GraphCopy and HostMemory are
// owning handles: Close is idempotent; one that is forgotten is freed by the
// garbage collector (set GOGGML_LEAKS=1 to have such handles logged with
// where they were opened). What depends on a handle keeps it alive: a tensor
// its buffer (or allocator, or graph copy), a buffer what it was allocated
// from, a plan its backend and graph. After an explicit Close, dependents
// report ggml.ErrClosed instead of touching freed memory.
//
// Work in flight keeps what it uses alive. A compute, a plan, a transfer or
// a data read holds the contexts, buffers and allocations it touches until
// it returns (async work: until Synchronize). Closing one of them
// meanwhile, from another goroutine or from a callback of that very work
// (a custom op, an eval callback), never frees memory the work reads:
// Buffer and Gallocr close at once for new users and free when the work is
// over; Context, GraphCopy, Backend and Plan return ggml.ErrBusy and stay
// open.
//
// A Backend runs one compute at a time: ggml gives it one work buffer.
// A compute (or async transfer, or SetThreads) started while another runs
// on it, on another goroutine or through a scheduler, returns ggml.ErrBusy
// rather than interleaving and computing wrong numbers. Buffers may be used
// from several goroutines at once.
//
// A CPU backend started by this package (InitByName, InitBest, cpu.New,
// ...) computes with one thread per CPU (SetThreads changes it), on a
// thread pool of its own (ggml_threadpool_new, polling 1) that its first
// compute or plan starts: its threads stay from compute to compute, poll
// for the next one for a few milliseconds and then sleep, and end with
// Close (a backend dropped without Close keeps
// them until the garbage collector frees it). ggml alone starts and
// joins its worker threads in every compute, which on the development
// machine made a 4096-wide matrix-vector product (~0.5 ms) 1.7x slower
// and a generated token of the small Llama example ~15-25 % slower.
// cpu.SetThreadPool replaces the pool with one of the user's, or, given
// nil, goes back to threads started per compute (ErrBusy during a compute
// of the backend). A CPU backend of a module loaded at run time keeps
// ggml's default. Should the system give ggml no more threads, the compute
// that starts the pool returns the error.
//
// # Errors
//
// Every call checks in Go what ggml would assert (offsets and sizes
// against the tensor, layouts, allocation state, buffer compatibility,
// device capabilities) and returns an error whose kind errors.Is tells:
// the kinds of package ggml (ErrClosed, ErrNotAllocated, ErrShape,
// ErrInvalid, ErrNoMemory, ...) and ErrNotFound, ErrUnsupported,
// ErrComputeFailed, ErrAborted here.
//
// # Coverage of ggml-backend.h, ggml-alloc.h and ggml-cpu.h
//
// Every public function of those headers (less the scheduler, which is
// package sched) is reachable from Go, here or in package cpu:
//
//	buffer types    ggml_backend_buft_*                  BufferType methods; CPUBufferType
//	buffers         ggml_backend_buffer_*                Buffer methods (Base for host buffers only)
//	multi-buffers   ggml_backend_multi_buffer_*          NewMultiBuffer, Buffer.IsMulti, Buffer.SetUsage
//	backends        ggml_backend_{guid,name,free,...}    Backend methods; Compute, ComputeAsync, Synchronize
//	transfers       ggml_backend_tensor_{set,get,memset} TensorSet, TensorGet, TensorMemset
//	                ..._async, ggml_backend_tensor_copy* Backend.SetTensorAsync, GetTensorAsync, CopyTensorAsync; TensorCopy
//	                ggml_backend_tensor_{set,get}_2d*    TensorSet2D, TensorGet2D, Backend.SetTensor2DAsync, GetTensor2DAsync
//	                                                     (upstream ggml only)
//	plans           ggml_backend_graph_plan_*            Backend.NewPlan, Plan.Compute, Plan.Close
//	events          ggml_backend_event_*                 Device.NewEvent, Event methods
//	devices         ggml_backend_dev_*                   Device methods; Devices, DeviceAt, DeviceByName, DeviceByType
//	registry        ggml_backend_reg_*, _init_*, _load*  Reg methods; Regs, RegAt, RegByName, InitByName,
//	                                                     InitByType, InitBest, Load, Unload, LoadAll, LoadAllFromPath
//	proc addresses  set_n_threads, set_abort_callback,   Backend.SetThreads, Compute's context, Reg.Features,
//	                get_features, any other              Reg.ProcAddress
//	placement       ggml_backend_tensor_alloc, view_init TensorAlloc, ViewInit
//	                ggml_backend_alloc_ctx_tensors*      AllocContextTensors, AllocContextTensorsFromType, ContextTensorsSize
//	                ggml_tallocr_*                       NewTallocr, Tallocr.Alloc
//	                ggml_gallocr_*                       NewGallocr, Gallocr methods (ReserveSizes for reserve_n_size)
//	graph utilities ggml_backend_graph_copy(_free)       Backend.CopyGraph, GraphCopy
//	                ggml_backend_compare_graph_backend   CompareGraphBackend
//	CPU buffers     ggml_backend_cpu_buffer_from_ptr,    CPUBufferFromHostMemory, Device.BufferFromHostMemory
//	                ggml_backend_dev_buffer_from_host_ptr  (over HostMemory: C memory that C may keep pointers to)
//	CPU backend     ggml_backend_cpu_init, _is_cpu,      cpu.New, Backend.IsCPU, Backend.SetThreads,
//	                _set_n_threads, _set_abort_callback  Backend.Compute (context cancels through the abort callback)
//	                _set_threadpool, ggml_threadpool_*   cpu.NewThreadPool, ThreadPool methods, cpu.SetThreadPool
//	                ggml_numa_init, ggml_is_numa         cpu.NUMAInit, cpu.IsNUMA
//	                ggml_cpu_has_*                       ggml.CPUFeatures, cpu.Has, cpu.Features
//
// Left out, with the reason:
//
//	ggml_backend_register, ggml_backend_device_register
//	    Go cannot make a registry entry or device, and ggml does not check
//	    for duplicates: registering one already there corrupts the registry.
//	    Load registers what a library brings.
//	ggml_threadpool_get_n_threads
//	    declared in ggml-cpu.h but defined nowhere in the provider (it does not
//	    link); ThreadPool.Threads keeps the count in Go.
//	ggml_threadpool_params_match
//	    ThreadPoolParams is a Go struct: compare it in Go.
//	ggml_cpu_init, ggml_backend_cpu_reg
//	    ggml calls ggml_cpu_init itself; the CPU registry entry is RegByName("CPU").
//	ggml_graph_plan, ggml_graph_compute, ggml_graph_compute_with_ctx
//	    the CPU computing without a backend; Backend.Compute and Plan do the
//	    same with the backend's work buffer, threads and abort callback.
//	ggml_new_i32/f32, ggml_{get,set}_{i32,f32}{,_1d,_nd}, ggml_cpu_fp*_to_*,
//	ggml_get_type_traits_cpu
//	    element access and conversion helpers, not backend API: ggml.SetData
//	    and ggml.Data move data; the op and quantization work of package ggml
//	    covers conversions.
//	ggml_gallocr_new
//	    NewGallocr with one buffer type (it calls ggml_gallocr_new_n).
//
// # Meta device
//
// NewMetaDevice makes a device over 1 to 16 devices (RPC devices, the CPU
// repeated, GPUs) for tensor parallelism: a SplitFunc says how each weight
// is spread (SplitAxis0..3 with per-device shares and segments, Mirrored,
// Partial), its buffers hold each device's share, and its backend computes
// a graph on every device, all-reducing partial sums where an op needs
// their total (a mul_mat of two tensors split along axis 0). Use it under
// a scheduler before the CPU backend ({meta, cpu}), with the weights'
// buffer marked UsageWeights; place its weights with AllocContextTensors
// (TensorAlloc and Tallocr refuse meta buffers).
//
// ggml's meta backend (upstream v0.21.0) asserts on what it cannot do;
// go-ggml checks it in Go first: a split that does not add up, a panic or
// an error of the split function (ErrInvalid, at allocation); a graph with
// an op whose sources are split in ways ggml cannot combine, a non-linear
// op of a Partial tensor, a per-row op of a tensor split along its rows
// (ErrInvalid, before allocation and compute); an op go-ggml does not know
// the split rule of, a read of a Partial tensor, a write or read of a
// tensor split along axis 3, a read of a result whose segments ggml lost,
// and a CPU node reading a meta buffer of host devices (whose addresses are
// placeholders in v0.21.0) (ErrUnsupported). A meta device lives for the
// process (ggml keeps it): make each one once.
package backend
