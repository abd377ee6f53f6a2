// Package opt trains models with ggml-opt (ggml-opt.h): datasets, an
// optimization context over a backend scheduler, the losses ggml builds
// (mean, sum, cross-entropy, mean squared error), AdamW and SGD, epochs
// and fits with Go progress callbacks and cancellation between batches,
// and results with their uncertainties.
//
// A model is a graph from an input tensor to an output tensor whose
// weights are marked with ggml.Tensor.SetParam:
//
//   - the weights and the inputs live in a backend buffer of their own
//     (backend.AllocContextTensors);
//   - the ops from the inputs to the outputs are built in a NoAlloc context
//     that nothing allocates: ggml-opt copies that graph, with its backward
//     pass and optimizer steps, and allocates the copies on the scheduler.
//
// The inputs are a matrix of one datapoint per column, the outputs one
// column per datapoint; a Dataset holds datapoints (and labels) of those
// lengths. New checks the model against what ggml would assert on, by
// building the same loss and backward pass in a scratch context first.
//
// Both providers, the embedded one (ollama v0.17.4) and upstream ggml
// v0.21.0, have the same ggml-opt: AdamW, SGD and all four losses.
//
// How go-ggml differs from calling ggml-opt from C:
//
//   - Epoch and Fit are Go loops over ggml_opt_alloc, the copy of a batch
//     and ggml_opt_eval, as ggml_opt_epoch and ggml_opt_fit are C loops:
//     so a Go callback hears each batch, and a context.Context stops
//     between batches.
//   - Shuffling draws from a seed of the caller's (math/rand/v2's PCG):
//     ggml_opt_dataset_shuffle draws from an optimization context's
//     generator, whose seed cannot be set. A fit from the same seed,
//     weights and data is repeatable.
//   - The optimizer step parameters (get_opt_pars) come from a Go
//     function, Params.StepParams, called by the Go loop before each
//     optimizer step; go-ggml checks them and writes them to C memory that
//     the get_opt_pars callback returns. C keeps no Go pointer and never
//     calls Go during a compute, and invalid parameters are an error, not
//     ggml's assert.
//   - The scheduler is lent to the Optimizer for its life: ggml-opt resets
//     it and allocates its own graphs on it.
//
// Coverage, C to Go:
//
//	ggml_opt_dataset_init                 NewDataset, NewDatasetFrom
//	ggml_opt_dataset_free                 Dataset.Close
//	ggml_opt_dataset_ndata                Dataset.Len
//	ggml_opt_dataset_data, _labels        Dataset.SetData, SetLabels, Data, Labels, Fill
//	ggml_opt_dataset_shuffle              Dataset.Shuffle (go-ggml's generator)
//	ggml_opt_dataset_get_batch            inside Epoch (in the dataset's order)
//	ggml_opt_get_default_optimizer_params DefaultStepParams
//	ggml_opt_default_params, ggml_opt_init New
//	ggml_opt_free                         Optimizer.Close
//	ggml_opt_reset                        Optimizer.Reset
//	ggml_opt_context_optimizer_type       Optimizer.Method
//	ggml_opt_optimizer_name               Method.String
//	ggml_opt_alloc, ggml_opt_eval         inside Epoch, Evaluate, Fit
//	ggml_opt_epoch                        Optimizer.Epoch, Optimizer.Evaluate
//	ggml_opt_epoch_callback_progress_bar  EpochParams.ProgressBar, FitParams.ProgressBar
//	ggml_opt_fit                          Optimizer.Fit
//	ggml_opt_result_init, _free, _reset   NewResult, Result.Close, Result.Reset
//	ggml_opt_result_ndata, _loss, _accuracy Result.Stats
//	ggml_opt_result_pred                  Result.Predictions
//
// Not bound: dynamic graphs (ggml_opt_prepare_alloc: a graph per batch),
// the tensor getters (ggml_opt_inputs, _outputs, _labels, _loss, _pred,
// _ncorrect, _grad_acc: their memory is ggml-opt's copies'), and
// ggml_opt_dataset_get_batch_host.
package opt
