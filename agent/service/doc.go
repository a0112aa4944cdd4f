// Package service is the agent's operator shell: everything that turns
// the operator's flags and config files into a running dprl agent process
// and operates it. The serving core, package agent, is what it runs.
//
// # Core and shell
//
// The core (package agent) serves and learns: Config and its validation,
// the Agent (act and end, sessions and their limits, the fair learner
// queue, batches, the DP update and its release to the ledger), fixed
// policies, snapshots, the guarantee read from the ledger and the text
// that describes it, the Prometheus counters, and the pause on a full
// disk. It reads no setting of the operator's, imports no NATS client or
// server and opens no socket (it uses only the wire protocol's error
// codes and the requester's identity, stream.ReplyOrigin): it is driven
// through Agent.Act, Agent.End and Agent.Run.
//
// The shell (this package) resolves and checks Settings into a
// ServiceConfig (settings*.go: one small resolver per concern: the spec,
// the noise, the transport, the caps and limits), opens each model's
// ledger and creates its agent (models.go, multi.go), starts or connects
// to NATS with its security (security.go) and serves the wire protocol
// with Handler (transport.go), serves the ops HTTP server (/metrics,
// /status, /readyz and the status page: http.go, statuspage.go), takes
// backups (backup.go), announces what the process serves and its
// guarantee (announce.go), and runs the process's shutdown (Service.Close:
// tell open sessions, drain, close the ledgers).
//
// # What the roles of a scaled-out deployment reuse
//
// Split into roles over JetStream (serving replicas and one learner), a
// serving replica needs the core's act path (Agent.Act and Agent.End, the
// sessions and their limits) and the shell's transport (Handler,
// WireError, the NATS connection and its security); a learner needs the
// core's batching and release (the fair queue, the DP update and the
// ledger release, with Agent.Queued and Guarantee), and the shell's
// settings, ledger opening and backups. Settings resolution, the ops
// server and the announcement are shared by every role.
package service
