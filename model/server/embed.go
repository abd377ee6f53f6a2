package server

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"

	"github.com/go-ggml/ggml/model"
)

// maxInputs is the most inputs one embeddings request may give.
const maxInputs = 256

// embeddingRequest is /v1/embeddings' body.
type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
}

// inputs reads an embedding request's input: a string, an array of
// strings, an array of token IDs, or an array of arrays of them; at least
// one, and no null where a string or an ID belongs.
func (s *Server) inputs(raw json.RawMessage) ([][]int32, error) {
	if isNull(raw) {
		return nil, badRequest("no input")
	}
	var texts []*string
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		texts = []*string{&one}
	} else if err := json.Unmarshal(raw, &texts); err != nil {
		var ids []*int32
		var idss [][]*int32
		if err := json.Unmarshal(raw, &ids); err == nil {
			idss = [][]*int32{ids}
		} else if err := json.Unmarshal(raw, &idss); err != nil {
			return nil, badRequest("input is not a string, an array of strings or an array of token IDs")
		}
		if len(idss) > maxInputs {
			return nil, badRequest("%d inputs, at most %d", len(idss), maxInputs)
		}
		out := make([][]int32, len(idss))
		for i, ids := range idss {
			if out[i], err = tokenIDs(fmt.Sprintf("input %d", i), ids); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if len(texts) == 0 {
		return nil, badRequest("no input")
	}
	if len(texts) > maxInputs {
		return nil, badRequest("%d inputs, at most %d", len(texts), maxInputs)
	}
	out := make([][]int32, len(texts))
	for i, t := range texts {
		if t == nil {
			return nil, badRequest("input %d is null, want a string", i)
		}
		ids, err := s.tokenize(fmt.Sprintf("input %d", i), *t)
		if err != nil {
			return nil, err
		}
		out[i] = ids
	}
	return out, nil
}

type embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	var req embeddingRequest
	if err := s.decode(w, r, &req); err != nil {
		fail(w, err)
		return
	}
	if !s.m.Encoder() {
		fail(w, badRequest("the model (%s) is no embedding model", s.m.Config.Arch))
		return
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		fail(w, badRequest("encoding_format %q: float or base64", req.EncodingFormat))
		return
	}
	inputs, err := s.inputs(req.Input)
	if err != nil {
		fail(w, err)
		return
	}
	data := make([]embedding, len(inputs))
	tokens := 0
	for i, ids := range inputs {
		v, err := s.e.Embed(r.Context(), ids, model.PoolDefault)
		if err != nil {
			fail(w, err)
			return
		}
		tokens += len(ids)
		data[i] = embedding{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			data[i].Embedding = base64.StdEncoding.EncodeToString(b)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list", "data": data, "model": s.opts.Name,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens},
	})
}
