package backend

/*
#include "goggml.h"

extern void goggmlMetaSplit(struct ggml_tensor *t, uintptr_t ud, goggml_split_state *out);

// goggml_meta_split_cb is the split function of every meta device go-ggml
// makes: it asks the Go side (goggmlMetaSplit), which answers from the
// splits it checked when the tensors were allocated. Declared in goggml.h.
goggml_split_state goggml_meta_split_cb(const struct ggml_tensor * t, void * ud) {
	goggml_split_state s;
	memset(&s, 0, sizeof(s));
	goggmlMetaSplit((struct ggml_tensor *)t, (uintptr_t)ud, &s);
	return s;
}
*/
import "C"
