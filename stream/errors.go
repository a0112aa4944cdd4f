package stream

import "fmt"

// Code is a stable wire error code. Codes are part of protocol v1: they are
// never renamed or reused; new codes may be added.
type Code string

// The registry of wire error codes. Every error reply carries one of these
// (a newer peer may send a code this version does not know; it is kept as is).
const (
	// CodeBadRequest: the body is not a well-formed JSON object of the
	// expected shape (syntax error, trailing data, duplicate field).
	CodeBadRequest Code = "bad_request"
	// CodeUnknownField: the body has a field protocol v1 does not define.
	CodeUnknownField Code = "unknown_field"
	// CodeWrongType: a field has the wrong JSON type (null included).
	CodeWrongType Code = "wrong_type"
	// CodeMissingField: a required field is absent.
	CodeMissingField Code = "missing_field"
	// CodeBadID: a session or user id is empty, too long, not UTF-8 or
	// contains control characters.
	CodeBadID Code = "bad_id"
	// CodeObsDim: the observation has the wrong length.
	CodeObsDim Code = "obs_dim"
	// CodeNonFinite: a number is NaN or infinite, or overflows float64
	// (such as 1e400).
	CodeNonFinite Code = "non_finite"
	// CodeTooLarge: the message exceeds the configured size limit.
	CodeTooLarge Code = "too_large"
	// CodeUnknownSession: the session does not exist (never started, ended,
	// closed after its idle timeout or lifetime) or belongs to another user:
	// the two are not told apart.
	CodeUnknownSession Code = "unknown_session"
	// CodeSessionLimit: a limit of open sessions is reached: the agent's,
	// the user's or the requesting connection's (the message says which).
	CodeSessionLimit Code = "session_limit"
	// CodeStepLimit: the session has reached its step limit.
	CodeStepLimit Code = "step_limit"
	// CodeShuttingDown: the agent is stopping and takes no new work: its
	// open sessions are abandoned (neither learned from nor logged). A
	// stopping agent answers every request so for a short grace period
	// before it unsubscribes (after which NATS answers "no responders"):
	// a client should stop starting sessions.
	CodeShuttingDown Code = "shutting_down"
	// CodeMemoryLimit: the agent's memory budget for sessions is spent: a
	// new session is refused, or an open one is closed (as truncated) at
	// the step that would pass the budget. Retry later.
	CodeMemoryLimit Code = "memory_limit"
	// CodeInternal: the agent failed (a bug or a storage failure); the
	// message says no more than that.
	CodeInternal Code = "internal"
)

// registry is the one table of codes; Codes and the uniqueness test read it.
var registry = [...]struct {
	code Code
	doc  string
}{
	{CodeBadRequest, "malformed request"},
	{CodeUnknownField, "unknown field"},
	{CodeWrongType, "wrong field type"},
	{CodeMissingField, "missing required field"},
	{CodeBadID, "invalid id"},
	{CodeObsDim, "wrong observation length"},
	{CodeNonFinite, "non-finite number"},
	{CodeTooLarge, "message too large"},
	{CodeUnknownSession, "unknown session"},
	{CodeSessionLimit, "too many open sessions"},
	{CodeStepLimit, "session step limit reached"},
	{CodeShuttingDown, "shutting down"},
	{CodeMemoryLimit, "session memory budget spent"},
	{CodeInternal, "internal error"},
}

// Codes returns every registered code, in registry order, in a new slice.
func Codes() []Code {
	out := make([]Code, len(registry))
	for i, r := range registry {
		out[i] = r.code
	}
	return out
}

// Error is a protocol error: what a decoder returns for bad input, what a
// handler returns to send a specific code, and what the client returns for an
// error reply. Is compares codes only, so
// errors.Is(err, stream.ErrObsDim) holds for any *Error with code obs_dim,
// including one decoded from the wire.
type Error struct {
	Code    Code
	Message string
}

// Error returns "stream: <code>: <message>".
func (e *Error) Error() string {
	if e.Message == "" {
		return "stream: " + string(e.Code)
	}
	return "stream: " + string(e.Code) + ": " + e.Message
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t != nil && e != nil && t.Code == e.Code
}

// Errorf returns an *Error with the code and a formatted message. Handlers
// use it to send a specific code, such as
// stream.Errorf(stream.CodeUnknownSession, "session closed after idle timeout").
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func newErr(code Code, msg string) *Error { return &Error{Code: code, Message: msg} }

// Sentinels, one per code, for errors.Is. Their messages are the registry's
// short descriptions; compare with errors.Is, never with ==.
var (
	ErrBadRequest     = newErr(CodeBadRequest, "malformed request")
	ErrUnknownField   = newErr(CodeUnknownField, "unknown field")
	ErrWrongType      = newErr(CodeWrongType, "wrong field type")
	ErrMissingField   = newErr(CodeMissingField, "missing required field")
	ErrBadID          = newErr(CodeBadID, "invalid id")
	ErrObsDim         = newErr(CodeObsDim, "wrong observation length")
	ErrNonFinite      = newErr(CodeNonFinite, "non-finite number")
	ErrTooLarge       = newErr(CodeTooLarge, "message too large")
	ErrUnknownSession = newErr(CodeUnknownSession, "unknown session")
	ErrSessionLimit   = newErr(CodeSessionLimit, "too many open sessions")
	ErrStepLimit      = newErr(CodeStepLimit, "session step limit reached")
	ErrShuttingDown   = newErr(CodeShuttingDown, "shutting down")
	ErrMemoryLimit    = newErr(CodeMemoryLimit, "session memory budget spent")
	ErrInternal       = newErr(CodeInternal, "internal error")
)
