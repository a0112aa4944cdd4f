package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"dprl/internal/testutil"
	"dprl/stream"
)

// TestCloseAnswersInFlightSessions stops an agent served through an
// external NATS server (an embedded nats-server the agent reaches by its
// TCP URL, as it would a separate one) as dprl agent does on SIGINT (the
// context it started with ends, then Close) while clients play sessions
// back to back: every client's run must end on a coded shutting_down
// reply, none on "no responders" or a timeout; with one policy and with
// two models (clients on both). (Before, the end of the start context
// drained the subscriptions before the agent refused anything: no client
// saw shutting_down, and the requests published after the unsubscribe got
// "no responders".)
func TestCloseAnswersInFlightSessions(t *testing.T) {
	type target struct {
		prefix string
		obsDim int
	}
	for _, c := range []struct {
		name    string
		cfg     ServiceConfig
		targets []target
	}{
		{"one policy", ServiceConfig{Agent: cartpoleConfig(4)}, []target{{"dprl", 4}}},
		{"two models", ServiceConfig{Models: twoModels()}, []target{{"dprl.cartpole", 4}, {"dprl.tiny", 3}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer ns.Shutdown()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := c.cfg
			cfg.DataDir, cfg.NATS = t.TempDir(), ns.ClientURL()
			svc, err := StartService(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			const clients = 32
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				endings = map[string]int{}
				steps   = make(chan struct{}, clients)
			)
			for i := range clients {
				tg := c.targets[i%len(c.targets)]
				nc, err := stream.Connect(ns.ClientURL())
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				cl, err := stream.NewClient(nc, stream.WithTimeout(2*time.Second), stream.WithPrefix(tg.prefix))
				if err != nil {
					t.Fatal(err)
				}
				wg.Go(func() {
					obs := make([]float64, tg.obsDim)
					var err error
					for s := 0; err == nil; s++ {
						id, user := fmt.Sprintf("c%d-s%d", i, s), fmt.Sprintf("u%d-%d", i, s)
						for step := 0; step < 20 && err == nil; step++ {
							_, err = cl.Act(context.Background(), id, user, obs, 1, step == 0)
							select {
							case steps <- struct{}{}:
							default:
							}
						}
						if err == nil {
							_, err = cl.EndAs(context.Background(), id, user, 1, true)
						}
					}
					why := "other: " + err.Error()
					if errors.Is(err, stream.ErrShuttingDown) {
						why = "shutting_down"
					}
					mu.Lock()
					endings[why]++
					mu.Unlock()
				})
			}
			for range 200 { // the clients are under way
				<-steps
			}
			cancel() // SIGINT
			start := time.Now()
			if err := svc.Close(); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			wg.Wait()
			if endings["shutting_down"] != clients {
				t.Errorf("of %d clients, the last replies were %v; want every one shutting_down", clients, endings)
			}
			if took > DefaultShutdownGrace+time.Second {
				t.Errorf("Close took %v, grace %v", took, DefaultShutdownGrace)
			}
		})
	}
}

// TestCloseIdleIsQuick: with no client, the grace period ends after a short
// quiet time, not after the whole grace.
func TestCloseIdleIsQuick(t *testing.T) {
	svc, err := StartService(context.Background(), ServiceConfig{Agent: cartpoleConfig(4), DataDir: t.TempDir(), NATSListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > DefaultShutdownGrace/2 {
		t.Errorf("idle Close took %v", took)
	}
}

// TestCloseGraceBounded: a client told of the shutdown (a request of its
// answered shutting_down) is told for all the sessions its connection
// opened; a session whose client never sends again keeps Close answering
// shutting_down for the whole grace period, no longer, and the warning
// says how many sessions were not told.
func TestCloseGraceBounded(t *testing.T) {
	var logs testutil.LockedBuffer
	const grace = 300 * time.Millisecond
	svc, err := StartService(context.Background(), ServiceConfig{Agent: cartpoleConfig(4), DataDir: t.TempDir(), NATSListen: "127.0.0.1:0",
		ShutdownGrace: grace, Logger: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	client := func() *stream.Client {
		nc, err := stream.Connect(svc.NATSURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		cl, err := stream.NewClient(nc)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	talker, silent := client(), client()
	obs := []float64{0, 0, 0, 0}
	for _, id := range []string{"a", "b"} {
		if _, err := talker.Act(context.Background(), id, "u-"+id, obs, 0, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := silent.Act(context.Background(), "c", "u-c", obs, 0, true); err != nil {
		t.Fatal(err)
	}
	closed := make(chan time.Duration)
	start := time.Now()
	go func() { svc.Close(); closed <- time.Since(start) }()
	testutil.EventuallyTrue(t, time.Second, "Shutdown", func() bool { return svc.Agent().Untold() == 3 })
	if _, err := talker.Act(context.Background(), "a", "u-a", obs, 1, false); !errors.Is(err, stream.ErrShuttingDown) {
		t.Fatalf("act during the grace: %v, want shutting_down", err)
	}
	if n := svc.Agent().Untold(); n != 1 {
		t.Errorf("%d sessions not told after the talker's connection was, want 1 (the silent one's)", n)
	}
	took := <-closed
	if took < grace || took > grace+time.Second {
		t.Errorf("Close took %v with a silent session, grace %v", took, grace)
	}
	if !strings.Contains(logs.String(), `"sessions_not_told":1`) {
		t.Errorf("no warning naming the untold session: %s", logs.String())
	}
}
