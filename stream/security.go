package stream

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"dprl/internal/jsonstrict"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// The security of protocol v1 on NATS is described in the package
// documentation (doc.go, "Security").

// inboxRoot is the root of every reply inbox.
const inboxRoot = "_INBOX"

// InboxPrefix is the reply-inbox prefix of client identity name: a client
// of a secured server must make its requests with it (WithInbox), since it
// may subscribe to nothing else but the policy announcements.
func InboxPrefix(name string) string { return inboxRoot + "." + name }

// ClientIdentity is one client of a secured server: a user population's
// backend, the replay tool, a monitoring job. Each authenticates with an
// nkey (preferred: the server stores only the public key and the client
// proves it holds the seed, nothing secret crosses the wire) or a user name
// and password (a password starting with "$2a$" is a bcrypt hash, anything
// else is compared as plain text, which nats-server warns about).
type ClientIdentity struct {
	// Name names the identity; it is the last token of its inbox prefix
	// (InboxPrefix): 1 to 64 letters, digits, '-' or '_'.
	Name string `json:"name"`
	// NKey is the identity's public user nkey ("U..."); exclusive with User.
	NKey string `json:"nkey,omitempty"`
	// User and Password are a user name and its password or bcrypt hash.
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
}

// validate reports what is wrong with c.
func (c ClientIdentity) validate() error {
	if !validToken(c.Name) {
		return fmt.Errorf("name %q: want 1 to 64 letters, digits, '-' or '_'", c.Name)
	}
	switch {
	case c.NKey != "" && (c.User != "" || c.Password != ""):
		return fmt.Errorf("client %q: give an nkey or a user and password, not both", c.Name)
	case c.NKey != "":
		if !nkeys.IsValidPublicUserKey(c.NKey) {
			return fmt.Errorf("client %q: nkey %q is not a public user nkey (U...)", c.Name, c.NKey)
		}
	case c.User == "" || c.Password == "":
		return fmt.Errorf("client %q: give an nkey, or a user and a password", c.Name)
	}
	return nil
}

// ValidIdentityName reports whether name may name a client identity: 1 to
// 64 letters, digits, '-' or '_' (one subject token, no wildcard).
func ValidIdentityName(name string) bool { return validToken(name) }

func validToken(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// AgentPermissions are the agent's subject permissions under prefix ("":
// DefaultPrefix): subscribe to act (its queue group) and end and their
// session forms, publish policy
// announcements, and answer each request it received once (nats-server's
// response permission: the reply subject of a delivered request may be
// published to once, within two minutes).
func AgentPermissions(prefix string) *server.Permissions {
	prefix = orDefault(prefix)
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: []string{policySubject(prefix)}},
		Subscribe: &server.SubjectPermission{Allow: []string{actSubject(prefix), endSubject(prefix), actSubject(prefix) + ".*", endSubject(prefix) + ".*"}},
		Response:  &server.ResponsePermission{MaxMsgs: 1},
	}
}

// ClientPermissions are the subject permissions of client identity name
// under prefix ("": DefaultPrefix): publish act and end requests (plain,
// <prefix>.v1.act, and with a session token, <prefix>.v1.act.<token>),
// subscribe to its own inbox and to the policy announcements. A client
// reads no stream: in a cluster, neither the ledger of record nor the
// update queue (ClusterAccounts).
func ClientPermissions(prefix, name string) *server.Permissions {
	prefix = orDefault(prefix)
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: requests(prefix)},
		Subscribe: &server.SubjectPermission{Allow: []string{policySubject(prefix), InboxPrefix(name) + ".>"}},
	}
}

func orDefault(prefix string) string {
	if prefix == "" {
		return DefaultPrefix
	}
	return prefix
}

// Accounts returns the nats-server accounts of a secured protocol-v1
// server under prefix: the agent's public nkey with AgentPermissions and
// every client with ClientPermissions. Names, nkeys and user names must be
// unique, and no client may use the agent's key.
func Accounts(prefix, agentNKey string, clients []ClientIdentity) ([]*server.NkeyUser, []*server.User, error) {
	if !nkeys.IsValidPublicUserKey(agentNKey) {
		return nil, nil, fmt.Errorf("stream: accounts: agent nkey %q is not a public user nkey (U...)", agentNKey)
	}
	nk := []*server.NkeyUser{{Nkey: agentNKey, Permissions: AgentPermissions(prefix)}}
	var users []*server.User
	var errs []error
	names, keys, userNames := map[string]bool{}, map[string]bool{agentNKey: true}, map[string]bool{}
	for i, c := range clients {
		if err := c.validate(); err != nil {
			errs = append(errs, fmt.Errorf("client %d: %w", i+1, err))
			continue
		}
		if names[c.Name] {
			errs = append(errs, fmt.Errorf("client %d: name %q given twice", i+1, c.Name))
		}
		names[c.Name] = true
		perms := ClientPermissions(prefix, c.Name)
		if c.NKey != "" {
			if keys[c.NKey] {
				errs = append(errs, fmt.Errorf("client %q: nkey used twice (or it is the agent's)", c.Name))
			}
			keys[c.NKey] = true
			nk = append(nk, &server.NkeyUser{Nkey: c.NKey, Permissions: perms})
			continue
		}
		if userNames[c.User] {
			errs = append(errs, fmt.Errorf("client %q: user %q given twice", c.Name, c.User))
		}
		userNames[c.User] = true
		users = append(users, &server.User{Username: c.User, Password: c.Password, Permissions: perms})
	}
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("stream: accounts: %w", errors.Join(errs...))
	}
	return nk, users, nil
}

// ClientsFile is the JSON shape of a clients file (LoadClients).
type ClientsFile struct {
	// Clients are the identities allowed to use the agent.
	Clients []ClientIdentity `json:"clients"`
}

// LoadClients reads a clients file: {"clients":[{"name":"web","nkey":"U..."},
// {"name":"ops","user":"ops","password":"$2a$11$..."}]}. Unknown fields and
// trailing data are refused, and so is an empty list; the identities are
// validated as Accounts does.
func LoadClients(path string) ([]ClientIdentity, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("stream: clients file: %w", err)
	}
	var f ClientsFile
	if err := jsonstrict.Decode(b, &f); err != nil {
		return nil, fmt.Errorf("stream: clients file %s: %w", path, err)
	}
	if len(f.Clients) == 0 {
		return nil, fmt.Errorf("stream: clients file %s: no clients", path)
	}
	// Validate with a throwaway agent key: only the clients are checked here.
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("stream: clients file: %w", err)
	}
	pub, _ := kp.PublicKey()
	if _, _, err := Accounts("", pub, f.Clients); err != nil {
		return nil, fmt.Errorf("stream: clients file %s: %w", path, err)
	}
	return f.Clients, nil
}

// ServerTLS returns the TLS configuration of a server presenting the
// certificate certFile/keyFile (PEM) and, when clientCAFile is not "",
// requiring every client to present a certificate signed by one of its CAs
// (mutual TLS). TLS 1.2 is the minimum.
func ServerTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("stream: server TLS: need a certificate and its key")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("stream: server TLS: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAFile != "" {
		pem, err := os.ReadFile(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("stream: server TLS: client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("stream: server TLS: client CA %s: no PEM certificate", clientCAFile)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// RouteTLS returns the TLS configuration of a cluster's routes (mutual
// TLS): the member presents certFile/keyFile (PEM; the certificate must
// allow both server and client authentication) and accepts, in either
// direction, only a peer whose certificate caFile's CAs signed. TLS 1.2 is
// the minimum.
func RouteTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	if caFile == "" {
		return nil, errors.New("stream: route TLS: need the CA of the members' certificates")
	}
	cfg, err := ServerTLS(certFile, keyFile, caFile)
	if err != nil {
		return nil, fmt.Errorf("stream: route TLS: %w", err)
	}
	cfg.RootCAs = cfg.ClientCAs
	return cfg, nil
}

// WithInbox makes requests with the reply-inbox prefix of client identity
// name (InboxPrefix), the only inbox a secured server lets that identity
// subscribe to.
func WithInbox(name string) Option {
	return func(o *connOptions) error {
		if !validToken(name) {
			return fmt.Errorf("stream: WithInbox: name %q: want 1 to 64 letters, digits, '-' or '_'", name)
		}
		o.nats = append(o.nats, nats.CustomInboxPrefix(InboxPrefix(name)))
		return nil
	}
}

// WithUserPassword authenticates with a user name and password.
func WithUserPassword(user, password string) Option {
	return func(o *connOptions) error {
		if user == "" || password == "" {
			return errors.New("stream: WithUserPassword: empty user or password")
		}
		o.nats = append(o.nats, nats.UserInfo(user, password))
		return nil
	}
}

// WithNKeyPair authenticates with an nkey user key pair held in memory
// (WithNKey reads the seed from a file).
func WithNKeyPair(kp nkeys.KeyPair) Option {
	return func(o *connOptions) error {
		if kp == nil {
			return errors.New("stream: WithNKeyPair: nil key pair")
		}
		pub, err := kp.PublicKey()
		if err != nil {
			return fmt.Errorf("stream: WithNKeyPair: %w", err)
		}
		if !nkeys.IsValidPublicUserKey(pub) {
			return fmt.Errorf("stream: WithNKeyPair: %q is not a user key", pub)
		}
		o.nats = append(o.nats, nats.Nkey(pub, kp.Sign))
		return nil
	}
}
