package stream

import (
	"errors"
	"fmt"
	"os"

	"dprl/internal/jsonstrict"

	"github.com/nats-io/nats-server/v2/server"
)

// Who may read what in a cluster (dprl agent --role; docs/privacy.md,
// section 13). The update queue holds every finished session's clipped
// update before any noise: one session's contribution, bounded in norm but
// not private. Only the learner role may read it; a replica may only add to
// it, a client and an operator never see it. The ledger of record holds
// releases (noised, covered by the guarantee) and writer entries; learners
// append to it (and to its blob stream), replicas and operators read it.
// The writer lease is the learners'; the partition bucket the replicas'.
// Every other subject and every other JetStream API is refused.
//
// A permission to create or update a stream is a permission to read any
// other stream of the account: a stream may source (copy) another. So
// only learners create or update streams, and only the cluster's; a replica
// binds to the streams a learner created.

// DefaultClusterName is the cluster name dprl agent --role uses when none
// is given.
const DefaultClusterName = "default"

// ClusterNames are the JetStream names of cluster name's streams (the
// ledger of record in package ledger/record, the update queue in
// stream/updateq).
type ClusterNames struct {
	// Ledger is the ledger of record's stream, LedgerSubject its subject.
	Ledger, LedgerSubject string
	// Blobs is the ledger of record's blob stream (the snapshots and
	// updates of entries too large for one message), BlobsSubject its
	// subject.
	Blobs, BlobsSubject string
	// Updates is the update queue's stream, UpdatesSubject its subject.
	Updates, UpdatesSubject string
	// Lease is the writer lease's key-value bucket, LeaseStream its stream.
	Lease, LeaseStream string
	// Parts is the partition bucket, PartsStream its stream.
	Parts, PartsStream string
}

// ClusterStreams returns the names of cluster name's streams ("":
// DefaultClusterName).
func ClusterStreams(name string) ClusterNames {
	if name == "" {
		name = DefaultClusterName
	}
	return ClusterNames{
		Ledger: "DPRL_LEDGER_" + name, LedgerSubject: "dprl.ledger." + name,
		Blobs: "DPRL_BLOBS_" + name, BlobsSubject: "dprl.blobs." + name,
		Updates: "DPRL_UPDATES_" + name, UpdatesSubject: "dprl.updates." + name,
		Lease: "DPRL_LEASE_" + name, LeaseStream: "KV_DPRL_LEASE_" + name,
		Parts: "DPRL_PARTS_" + name, PartsStream: "KV_DPRL_PARTS_" + name,
	}
}

// jsAPI is JetStream's API prefix (no domain).
const jsAPI = "$JS.API."

// readStream are the API subjects that read stream st's messages and
// state: its info, a message by sequence (STREAM.MSG.GET) and direct gets
// (a key-value bucket's Get).
func readStream(st string) []string {
	return []string{jsAPI + "STREAM.INFO." + st, jsAPI + "STREAM.MSG.GET." + st, jsAPI + "DIRECT.GET." + st, jsAPI + "DIRECT.GET." + st + ".>"}
}

// ownStream are the API subjects that create stream st or update its
// configuration.
func ownStream(st string) []string {
	return []string{jsAPI + "STREAM.CREATE." + st, jsAPI + "STREAM.UPDATE." + st}
}

// consumeStream are the subjects of consumers of stream st: create (or
// update) one, read its info, delete it, pull its next messages,
// acknowledge them, and answer a push consumer's flow control (a
// key-value watch).
func consumeStream(st string) []string {
	return []string{jsAPI + "CONSUMER.CREATE." + st + ".>", jsAPI + "CONSUMER.DURABLE.CREATE." + st + ".>", jsAPI + "CONSUMER.INFO." + st + ".>",
		jsAPI + "CONSUMER.DELETE." + st + ".>", jsAPI + "CONSUMER.MSG.NEXT." + st + ".>", "$JS.ACK." + st + ".>", "$JS.FC." + st + ".>"}
}

// clusterClientPermissions are ClientPermissions on a cluster's server,
// whose mapping (PartitionMappings) turns a session subject into its
// partition's before the server checks the publish permission: a client
// may publish on the mapped subjects too. Publishing on another
// partition's subject directly gets nowhere a session is (the replica
// checks the partition: bad_request).
func clusterClientPermissions(prefix, name string) *server.Permissions {
	p := ClientPermissions(prefix, name)
	prefix = orDefault(prefix)
	p.Publish.Allow = append(p.Publish.Allow, prefix+".v1.p.*.act.*", prefix+".v1.p.*.end.*")
	return p
}

// requests are the protocol's request subjects under prefix: the plain
// ones and the forms carrying a session token.
func requests(prefix string) []string {
	return []string{actSubject(prefix), endSubject(prefix), actSubject(prefix) + ".*", endSubject(prefix) + ".*"}
}

// LearnerPermissions are the subject permissions of learner identity name
// of cluster cluster under prefix ("": DefaultClusterName, DefaultPrefix).
// A learner creates (and updates) every stream of the cluster; appends to
// the ledger of record and reads it; holds the writer lease; creates the
// update queue's consumer, pulls the clipped per-session updates and
// acknowledges them (it alone may: they are un-noised); and announces the
// policies it releases. It subscribes to its own reply inbox only
// (WithInbox). It may not publish to the update queue, nor read or write
// the partition bucket.
func LearnerPermissions(prefix, cluster, name string) *server.Permissions {
	n := ClusterStreams(cluster)
	pub := []string{n.LedgerSubject, n.BlobsSubject, "$KV." + n.Lease + ".>", jsAPI + "INFO", policySubject(orDefault(prefix))}
	for _, st := range []string{n.Ledger, n.Blobs, n.LeaseStream, n.Updates, n.PartsStream} {
		pub = append(pub, ownStream(st)...)
	}
	pub = append(pub, readStream(n.Ledger)...)
	pub = append(pub, readStream(n.Blobs)...)
	pub = append(pub, readStream(n.LeaseStream)...)
	pub = append(pub, jsAPI+"STREAM.INFO."+n.Updates, jsAPI+"STREAM.INFO."+n.PartsStream)
	pub = append(pub, consumeStream(n.Updates)...)
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: pub},
		Subscribe: &server.SubjectPermission{Allow: []string{InboxPrefix(name) + ".>"}},
	}
}

// ReplicaPermissions are the subject permissions of replica identity name
// of cluster cluster under prefix ("": DefaultClusterName, DefaultPrefix).
// A replica serves protocol v1: it subscribes to the act and end requests
// in every form (plain, with a session token, and after the server's
// partition mapping, <prefix>.v1.p.*.act.*) and answers each request once
// (a response permission). It publishes each finished session's clipped
// update to the update queue's subject, and nothing else of the queue: no
// stream info, no message read, no consumer. It reads the ledger of record
// (stream info and messages) and reads and writes the partition bucket
// (its keys, its info and consumers, to watch it); it neither creates nor
// updates any stream (a learner does), since a stream it configured could
// copy the update queue. It subscribes to its own reply inbox.
func ReplicaPermissions(prefix, cluster, name string) *server.Permissions {
	prefix = orDefault(prefix)
	n := ClusterStreams(cluster)
	// The probes check the servers' partition mapping (PartitionMappings);
	// the server checks a publish against the mapped subject.
	pub := []string{n.UpdatesSubject, "$KV." + n.Parts + ".>", jsAPI + "INFO", prefix + ".v1.probe.*", prefix + ".v1.p.*.probe.*"}
	pub = append(pub, readStream(n.Ledger)...)
	pub = append(pub, readStream(n.Blobs)...)
	pub = append(pub, readStream(n.PartsStream)...)
	pub = append(pub, consumeStream(n.PartsStream)...)
	sub := append(requests(prefix), prefix+".v1.p.*.act.*", prefix+".v1.p.*.end.*", prefix+".v1.p.*.probe.*", InboxPrefix(name)+".>")
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: pub},
		Subscribe: &server.SubjectPermission{Allow: sub},
		Response:  &server.ResponsePermission{MaxMsgs: 1},
	}
}

// OperatorPermissions are the subject permissions of operator identity
// name of cluster cluster (""; DefaultClusterName): read-only monitoring.
// An operator reads the ledger of record (to verify it against a
// process's copy), the writer lease's holder, the partition bucket, and
// the update queue's stream and consumer info (how many updates wait: counts,
// never an update), and watches the policy announcements under prefix. It
// writes nothing.
func OperatorPermissions(prefix, cluster, name string) *server.Permissions {
	n := ClusterStreams(cluster)
	pub := []string{jsAPI + "INFO", jsAPI + "STREAM.INFO." + n.Updates, jsAPI + "CONSUMER.INFO." + n.Updates + ".>"}
	pub = append(pub, readStream(n.Ledger)...)
	pub = append(pub, readStream(n.Blobs)...)
	pub = append(pub, readStream(n.LeaseStream)...)
	pub = append(pub, readStream(n.PartsStream)...)
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: pub},
		Subscribe: &server.SubjectPermission{Allow: []string{policySubject(orDefault(prefix)), InboxPrefix(name) + ".>"}},
	}
}

// ClusterAuth names the identities of a cluster's NATS server per role (the
// JSON of dprl nats --auth; LoadClusterAuth).
type ClusterAuth struct {
	// Cluster is the cluster's name (dprl agent --cluster-name; ""
	// DefaultClusterName) and Prefix the protocol's subject prefix
	// (--prefix; "": DefaultPrefix).
	Cluster string `json:"cluster,omitempty"`
	Prefix  string `json:"prefix,omitempty"`
	// Learners, Replicas, Clients and Operators are the identities of each
	// role (LearnerPermissions, ReplicaPermissions, ClientPermissions,
	// OperatorPermissions). An identity's name is its reply inbox's last
	// token: the process connects with that inbox (dprl agent
	// --nats-identity, dprl replay --nats-identity).
	Learners  []ClientIdentity `json:"learners"`
	Replicas  []ClientIdentity `json:"replicas"`
	Clients   []ClientIdentity `json:"clients,omitempty"`
	Operators []ClientIdentity `json:"operators,omitempty"`
}

// ClusterAccounts returns the nats-server accounts of a cluster's server:
// every identity with its role's permissions. Names, nkeys and user names
// must be unique across the roles (a name is an inbox: two identities
// sharing one could read each other's replies); the cluster name must be
// a stream-name token, the prefix a subject without wildcards; at least
// one learner and one replica.
func ClusterAccounts(a ClusterAuth) ([]*server.NkeyUser, []*server.User, error) {
	var errs []error
	if a.Cluster != "" && !validToken(a.Cluster) {
		errs = append(errs, fmt.Errorf("cluster %q: want 1 to 64 letters, digits, '-' or '_'", a.Cluster))
	}
	if a.Prefix != "" {
		if err := checkPrefix(a.Prefix); err != nil {
			errs = append(errs, err)
		}
	}
	if len(a.Learners) == 0 || len(a.Replicas) == 0 {
		errs = append(errs, errors.New("want at least one learner and one replica"))
	}
	var nk []*server.NkeyUser
	var users []*server.User
	names, keys, userNames := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, role := range []struct {
		name  string
		ids   []ClientIdentity
		perms func(prefix, cluster, name string) *server.Permissions
	}{
		{"learner", a.Learners, LearnerPermissions},
		{"replica", a.Replicas, ReplicaPermissions},
		{"client", a.Clients, func(prefix, _, name string) *server.Permissions { return clusterClientPermissions(prefix, name) }},
		{"operator", a.Operators, OperatorPermissions},
	} {
		for i, c := range role.ids {
			if err := c.validate(); err != nil {
				errs = append(errs, fmt.Errorf("%s %d: %w", role.name, i+1, err))
				continue
			}
			if names[c.Name] {
				errs = append(errs, fmt.Errorf("%s %d: name %q given twice", role.name, i+1, c.Name))
			}
			names[c.Name] = true
			perms := role.perms(a.Prefix, a.Cluster, c.Name)
			if c.NKey != "" {
				if keys[c.NKey] {
					errs = append(errs, fmt.Errorf("%s %q: nkey used twice", role.name, c.Name))
				}
				keys[c.NKey] = true
				nk = append(nk, &server.NkeyUser{Nkey: c.NKey, Permissions: perms})
				continue
			}
			if userNames[c.User] {
				errs = append(errs, fmt.Errorf("%s %q: user %q given twice", role.name, c.Name, c.User))
			}
			userNames[c.User] = true
			users = append(users, &server.User{Username: c.User, Password: c.Password, Permissions: perms})
		}
	}
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("stream: cluster accounts: %w", errors.Join(errs...))
	}
	return nk, users, nil
}

// checkPrefix reports a subject prefix that is not one or more tokens
// without wildcards.
func checkPrefix(p string) error {
	tok := 0
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '.' {
			continue
		}
		if !validToken(p[tok:i]) {
			return fmt.Errorf("prefix %q: want dot-separated tokens of letters, digits, '-' or '_'", p)
		}
		tok = i + 1
	}
	return nil
}

// LoadClusterAuth reads a cluster's auth file (ClusterAuth as JSON), e.g.
// {"learners":[{"name":"l1","nkey":"U..."}],"replicas":[{"name":"r1","nkey":"U..."}],
// "clients":[{"name":"web","user":"web","password":"$2a$11$..."}]}. Unknown
// fields and trailing data are refused; the identities are validated as
// ClusterAccounts does.
func LoadClusterAuth(path string) (ClusterAuth, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return ClusterAuth{}, fmt.Errorf("stream: auth file: %w", err)
	}
	var a ClusterAuth
	if err := jsonstrict.Decode(b, &a); err != nil {
		return ClusterAuth{}, fmt.Errorf("stream: auth file %s: %w", path, err)
	}
	if _, _, err := ClusterAccounts(a); err != nil {
		return ClusterAuth{}, fmt.Errorf("stream: auth file %s: %w", path, err)
	}
	return a, nil
}
