package service

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// OpsServer serves /healthz, /readyz, /metrics and /status, and what
// Handle adds (the status page).
type OpsServer struct {
	srv   *http.Server
	mux   *http.ServeMux
	ln    net.Listener
	ready atomic.Bool
	check atomic.Pointer[func() error]
}

// NewOpsServer listens on addr ("127.0.0.1:0" picks a port). status is
// called for /status; gather serves /metrics. The service adds the status
// page at / with Handle.
func NewOpsServer(addr string, gather prometheus.Gatherer, status func() any) (*OpsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return ServeOps(ln, gather, status), nil
}

// ServeOps is NewOpsServer on a listener the caller bound; Shutdown
// closes it.
func ServeOps(ln net.Listener, gather prometheus.Gatherer, status func() any) *OpsServer {
	mux := http.NewServeMux()
	o := &OpsServer{ln: ln, mux: mux}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !o.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		if c := o.check.Load(); c != nil {
			if err := (*c)(); err != nil {
				http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		w.Write([]byte("ready\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(gather, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(status())
	})
	o.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := o.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // reported by Addr callers through failed requests
		}
	}()
	return o
}

// Handle adds a handler for pattern (http.ServeMux's patterns).
func (o *OpsServer) Handle(pattern string, h http.Handler) { o.mux.Handle(pattern, h) }

// Addr is the listening address.
func (o *OpsServer) Addr() string { return o.ln.Addr().String() }

// SetReady flips /readyz.
func (o *OpsServer) SetReady(r bool) { o.ready.Store(r) }

// SetReadyCheck makes /readyz, while ready, also require check() == nil
// at each request (e.g. the NATS connection being up); the error's text
// is served after "not ready: ".
func (o *OpsServer) SetReadyCheck(check func() error) { o.check.Store(&check) }

// Shutdown stops the server.
func (o *OpsServer) Shutdown(ctx context.Context) error {
	if o == nil {
		return nil
	}
	return o.srv.Shutdown(ctx)
}
