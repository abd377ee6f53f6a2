// Package gpulink puts the GPU backends chosen by build tag into ggml's
// registry: with -tags vulkan (or cuda) every program that uses package
// backend sees the GPU devices, whether or not it imports package vulkan
// (or cuda) for their own calls. Package backend imports it.
//
// With the embedded provider it links the library make vulkan (make cuda)
// builds from the provider's sources and registers ggml_backend_vk_reg
// (ggml_backend_cuda_reg). With the system provider it links upstream's
// libggml-vulkan (libggml-cuda) from the install; an upstream libggml built
// with the backend has registered it already, and registering it again
// changes nothing.
package gpulink
