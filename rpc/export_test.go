package rpc

// RelayPort returns the port of the relay that ggml's client of c connects
// to.
func RelayPort(c *Client) int { return c.relay.port }

// Key returns the endpoint string ggml knows c's connection by.
func Key(c *Client) string { return c.key }
