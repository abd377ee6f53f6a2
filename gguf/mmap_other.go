//go:build !unix

package gguf

import "os"

// mapFile maps nothing outside Unix: Load copies.
func mapFile(*os.File, int) *mapping { return nil }

func dropPages([]byte) {}
