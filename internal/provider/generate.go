package provider

//go:generate go run ./gen
