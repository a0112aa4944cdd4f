package stream

import (
	"context"

	"dprl/sims"
)

// simsAgent is a copy of the planned sims.Agent interface. When sims.Agent
// lands, replace this declaration and the assertion below with
//
//	var _ sims.Agent = (*Client)(nil)
type simsAgent interface {
	Act(ctx context.Context, session, user string, obs []float64, reward float64, first bool) (sims.Action, error)
	End(ctx context.Context, session string, reward float64, terminal bool) error
}

var _ simsAgent = (*Client)(nil)
