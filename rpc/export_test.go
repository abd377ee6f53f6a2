package rpc

import "time"

// RelayPort returns the port of the relay that ggml's client of c connects
// to.
func RelayPort(c *Client) int { return c.relay.port }

// Key returns the endpoint string ggml knows c's connection by.
func Key(c *Client) string { return c.key }

// WaitLimit returns the bound of each wait for c's server after Connect
// (0: none).
func WaitLimit(c *Client) time.Duration { return c.relay.timeout }

// CommandCount is the number of commands of the protocol the relay reads.
const CommandCount = cmdCount

// HasAnswer reports whether the server answers command cmd (the relay's
// answerSize table).
func HasAnswer(cmd byte) bool { return answerSize[cmd] >= 0 }
