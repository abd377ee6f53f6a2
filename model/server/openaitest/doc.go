// Package openaitest holds the tests of package model/server with
// OpenAI's official Go client (github.com/openai/openai-go): a module of
// its own, so that the client, its dependencies and the Go 1.26 it
// requires stay out of go-ggml's own module. Run them from this directory
// with go test (make test-openai).
package openaitest
