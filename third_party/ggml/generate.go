package ggml

//go:generate go run ./gen
