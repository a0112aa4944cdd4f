package stream

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Sessions that stick to one serving process.
//
// Besides <prefix>.v1.act and <prefix>.v1.end, protocol v1 accepts a
// request on its session's subject, <prefix>.v1.act.<token> and
// <prefix>.v1.end.<token>, token = SessionToken(session); Client uses
// them. A single agent serves both forms. The NATS servers of a cluster map
// the session subjects onto n partitions (PartitionMappings: nats-server's
// partition(n,1) subject transform, a hash of the token), and each serving
// replica subscribes only to the partitions it holds
// (ServerConfig.Partitions, Server.AddPartition), so that every request of
// one session reaches the replica that holds the session's state.

// MaxPartitions bounds a cluster's partition count.
const MaxPartitions = 1024

// SessionToken is the subject token of session: the id itself when it is
// 1 to 64 letters, digits, '-' or '_' (one subject token), otherwise "h"
// and the first 32 hex digits of its SHA-256. Only routing depends on it:
// two sessions with one token go to the same partition, nothing more.
func SessionToken(session string) string {
	if validToken(session) {
		return session
	}
	sum := sha256.Sum256([]byte(session))
	return "h" + hex.EncodeToString(sum[:16])
}

// tokenMatches reports whether token is SessionToken(session), without
// allocating.
func tokenMatches(token, session string) bool {
	if validToken(session) {
		return token == session
	}
	if len(token) != 33 || token[0] != 'h' {
		return false
	}
	sum := sha256.Sum256([]byte(session))
	var h [32]byte
	hex.Encode(h[:], sum[:16])
	return string(h[:]) == token[1:]
}

// SessionPartition is the partition, of n, of a session token: the
// 32-bit FNV-1a hash of the token modulo n, which is what nats-server's
// partition(n,1) transform computes for a subject's first wildcard token.
func SessionPartition(token string, n int) int {
	if n <= 0 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(token))
	return int(h.Sum32() % uint32(n))
}

// PartitionMappings are the subject mappings that partition protocol v1's
// session subjects under prefix ("": DefaultPrefix) into n partitions:
//
//	<prefix>.v1.act.<token>   -> <prefix>.v1.p.<i>.act.<token>
//	<prefix>.v1.end.<token>   -> <prefix>.v1.p.<i>.end.<token>
//	<prefix>.v1.probe.<token> -> <prefix>.v1.p.<i>.probe.<token>
//
// with i = SessionPartition(token, n). The probe mapping lets a replica
// check that the servers partition as it expects (the same n) before it
// serves. Every server of a cluster must hold the same mappings: a
// request is mapped by the server its client is connected to.
func PartitionMappings(prefix string, n int) map[string]string {
	prefix = orDefault(prefix)
	m := make(map[string]string, 3)
	for _, op := range []string{"act", "end", "probe"} {
		m[prefix+".v1."+op+".*"] = fmt.Sprintf("%s.v1.p.{{partition(%d,1)}}.%s.{{wildcard(1)}}", prefix, n, op)
	}
	return m
}

// sessionSubject is the session form of op's subject.
func sessionSubject(prefix, op, session string) string {
	return prefix + ".v1." + op + "." + SessionToken(session)
}

// partitionSubject is what the servers map op's session subjects of
// partition i onto (a wildcard for the token).
func partitionSubject(prefix string, i int, op string) string {
	return prefix + ".v1.p." + strconv.Itoa(i) + "." + op + ".*"
}

// ProbeSubject is the subject a probe for token is published on, and
// ProbeReceipt the wildcard subject the probe arrives on after the
// servers' mapping (its fifth token is the partition).
func ProbeSubject(prefix, token string) string { return orDefault(prefix) + ".v1.probe." + token }

// ProbeReceipt is the subject to subscribe to for probes of token, in any
// partition.
func ProbeReceipt(prefix, token string) string { return orDefault(prefix) + ".v1.p.*.probe." + token }

// ProbePartition returns the partition of a received probe's subject.
func ProbePartition(prefix, subject string) (int, error) {
	rest, ok := strings.CutPrefix(subject, orDefault(prefix)+".v1.p.")
	if !ok {
		return 0, fmt.Errorf("stream: probe subject %q is not a partition's", subject)
	}
	i, _, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(i)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("stream: probe subject %q: partition %q", subject, i)
	}
	return n, nil
}

// checkSubject reports a request whose subject does not fit its session:
// a session subject's token must be SessionToken(session) and, on a
// partition's subject, the token must hash to that partition (a client
// publishing past the servers' mapping cannot split a session).
func (s *Server) checkSubject(subject, session string) *Error {
	rest, ok := strings.CutPrefix(subject, s.cfg.Prefix+".v1.")
	if !ok || rest == "act" || rest == "end" {
		return nil
	}
	token := rest[strings.LastIndexByte(rest, '.')+1:]
	if !tokenMatches(token, session) {
		return newErr(CodeBadRequest, "the subject's session token is not the session's (want SessionToken of the session id)")
	}
	if p, ok := strings.CutPrefix(rest, "p."); ok && s.cfg.Partitions > 0 {
		i, _, _ := strings.Cut(p, ".")
		if n, err := strconv.Atoi(i); err != nil || n != SessionPartition(token, s.cfg.Partitions) {
			return newErr(CodeBadRequest, "the session's token belongs to another partition")
		}
	}
	return nil
}
