package stream

import "dprl/sims"

// The client is what simulated users drive the agent through.
var _ sims.Agent = (*Client)(nil)
