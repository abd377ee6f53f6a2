package rpc

// SocketFD returns the file number of ggml's socket of c, or -1 when the
// package could not find it.
func SocketFD(c *Client) int { return int(c.fd.Load()) }

// Key returns the endpoint string ggml knows c's connection by.
func Key(c *Client) string { return c.key }
