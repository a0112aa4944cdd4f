package service

import (
	"context"
	"errors"

	"dprl/agent"
	"dprl/stream"
)

// Handler serves the agent over wire protocol v1: it satisfies
// stream.Handler and maps the agent's errors to the wire's stable codes.
type Handler struct{ A *agent.Agent }

var _ stream.Handler = Handler{}

// Act implements stream.Handler.
func (h Handler) Act(_ context.Context, req stream.ActRequest) (stream.ActReply, error) {
	var reward float64
	if req.Reward != nil {
		reward = *req.Reward
	}
	r, err := h.A.ActFrom(req.Origin, req.Session, req.User, req.Obs, reward, req.Reward != nil)
	if err != nil {
		return stream.ActReply{}, WireError(err)
	}
	return stream.ActReply{Action: r.Action, Version: r.Version, Step: r.Step}, nil
}

// End implements stream.Handler.
func (h Handler) End(_ context.Context, req stream.EndRequest) (stream.EndReply, error) {
	r, err := h.A.EndFrom(req.Origin, req.Session, req.User, req.Reward, req.Terminal)
	if err != nil {
		return stream.EndReply{}, WireError(err)
	}
	return stream.EndReply{OK: true, Used: r.Used, Reason: r.Reason}, nil
}

// WireError maps an agent error to a *stream.Error with its stable code.
func WireError(err error) error {
	codes := []struct {
		err  error
		code stream.Code
	}{
		{agent.ErrObsDim, stream.CodeObsDim}, {agent.ErrNonFinite, stream.CodeNonFinite}, {agent.ErrUnknownSession, stream.CodeUnknownSession},
		{agent.ErrBadRequest, stream.CodeBadRequest}, {agent.ErrSessionLimit, stream.CodeSessionLimit}, {agent.ErrStepLimit, stream.CodeStepLimit},
		{agent.ErrMemoryLimit, stream.CodeMemoryLimit}, {agent.ErrShuttingDown, stream.CodeShuttingDown},
	}
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return stream.Errorf(c.code, "%s", err.Error())
		}
	}
	return stream.Errorf(stream.CodeInternal, "internal error")
}
