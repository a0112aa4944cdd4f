package stream_test

import (
	"context"
	"errors"
	"fmt"

	"dprl/sims"
	"dprl/stream"
)

type echoAgent struct{}

func (echoAgent) Act(_ context.Context, r stream.ActRequest) (stream.ActReply, error) {
	return stream.ActReply{Action: sims.Action{Index: 1}, Version: 1, Step: 0}, nil
}

func (echoAgent) End(_ context.Context, r stream.EndRequest) (stream.EndReply, error) {
	return stream.EndReply{OK: true, Used: r.Terminal}, nil
}

// An embedded server, a server for a handler, and a client, in one process.
func Example() {
	ns, err := stream.StartEmbedded(stream.EmbeddedOptions{DontListen: true})
	if err != nil {
		panic(err)
	}
	defer ns.Shutdown()
	nc, err := stream.Connect("", stream.WithInProcess(ns))
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	srv, err := stream.Serve(context.Background(), nc, echoAgent{}, stream.ServerConfig{ObsDim: 2})
	if err != nil {
		panic(err)
	}
	defer srv.Stop()

	c, err := stream.NewClient(nc)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	a, err := c.Act(ctx, "s1", "u1", []float64{0.5, -1}, 0, true)
	fmt.Println(a.Index, err)
	_, err = c.Act(ctx, "s1", "u1", []float64{0.5}, 1, false)
	fmt.Println(errors.Is(err, stream.ErrObsDim), err)
	fmt.Println(c.End(ctx, "s1", 1, true))
	// Output:
	// 1 <nil>
	// true stream: obs_dim: obs: want 2 elements, got 1
	// <nil>
}
