// Package ledger is the durable, verifiable privacy ledger of dprl, stored in
// Pebble in the agent's data directory.
//
// # Contract
//
// Every privacy cost dprl incurs is an Entry: the mechanism that ran (its
// accountant events, delta and the epsilon they imply), the unit it protects
// (session, trajectory, expert), what it paid for (a policy version, an offline
// run on a dataset) and whether its noise came from a seeded or a secure
// generator. Entries are numbered and hash-chained (SHA-256 over the entry and
// the previous hash), so history cannot be rewritten without Verify noticing.
//
// A policy version and the entry that pays for it, the participating users'
// counters and the head pointer are written in one synced Pebble batch
// (Store.Release): after a crash at any point the store holds either all of
// them or none, so no released policy lacks its cost and no cost is counted
// twice.
//
// Users are keyed by an HMAC-SHA256 of their id under a secret created at the
// first start (a 0600 file beside the store); the raw id is never stored.
// The store records the secret's fingerprint (an HMAC of a fixed label under
// it) when it is created and refuses any other secret: under another key
// every user's counter would start again from zero. A
// user's counter records how many updates they took part in and the sum of
// 1/z^2 over those updates, from which their epsilon is exact (Gaussian
// mechanisms compose exactly as Gaussian DP; see package accountant).
//
// A release with correlated noise (a banded matrix-factorization stream,
// Entry.Correlation) also writes its share of the stream's state in that
// batch, and Release refuses a user whose participation would break the
// stream's pattern (at most MaxParticipations, any two at least
// MinSeparation releases apart); see bandmf.go. That state is secret: the
// data directory then holds the exact means of the last Band-1 releases.
//
// Offline runs are charged against the dataset their records belong to.
// A dataset is identified by its records' content, not its bytes: callers
// pass each record's identity (sessionlog.ContentHash) and exact hash
// (sessionlog.HashRecord), a record index maps every record a run or a
// derived file registered to the entry that registered it, and a link index
// ties further hashes to such entries: the identities of records an older
// ledger holds under their exact hashes (FileRecords), and the exact hashes
// of a released file's records. A file
// sharing any record with a registered dataset is charged to that dataset
// (its other records join it); a file with records of two datasets is
// refused. Budgets are kept per protected unit (trajectory, user, expert),
// each with its own cap and total, never added across units. The cap is
// stored with the dataset by its first run at a unit and changed only by a
// dataset_cap entry (Store.SetCap). Store.ChargeOffline refuses a run whose
// composition with the unit's earlier runs would exceed the cap, before the
// caller computes anything it releases; Store.RegisterDerived ties files a
// run writes (SVT outputs) to its dataset, marking the output of a
// differentially private release (an SVT stable release) as released, and
// Store.Lineage tells whether a file's records are all known to the ledger
// and all records of its dataset's released files (public data).
//
// # Integrity
//
// Pebble recovers what it finds on disk: a damaged or deleted write-ahead
// log, a damaged MANIFEST or an older copy of the store can leave a store
// that opens cleanly, with a consistent chain, shorter than what was
// written. So every commit that moves the head is also appended, after the
// synced batch, to an fsynced head file beside the store (ledger.heads; the
// comment on headsFile in heads.go gives its format and why the order is
// crash-safe). Open checks the store
// against it read-only, before Pebble's recovery rewrites anything, and a
// writable open runs the full Verify: a damaged, shortened or rolled-back
// store is refused with ErrCorrupt and a description, never served. What
// no file inside the data directory can detect is an older copy of the
// whole directory; CheckHead (and Options.ExpectHead) compare the ledger
// with a head recorded elsewhere. Pebble's corruption reports and panics
// become ErrCorrupt errors, and a store that saw one refuses every later
// write.
//
// A full disk is not damage: a write that fails with ENOSPC or EDQUOT,
// or is refused because the free space fell below what Pebble needs to
// flush and start a new log, returns ErrDiskFull, whose text says the
// ledger is intact and what to do; Open fails with it within seconds
// instead of waiting for a flush Pebble retries without end. A head
// record a full disk kept out is written by the next write (Writable
// retries it), so the store resumes once space is freed; after a failed
// write-ahead-log write (ErrNeedsRestart) it must be reopened (diskfull.go).
//
// Verify recomputes the hash chain, every epsilon from the recorded events,
// the head pointer, the snapshots the entries pay for, the user counters,
// each dataset's caps and per-unit totals (replaying its runs and cap
// changes, and checking that no run was charged above the cap in force),
// the record index, the user key's fingerprint and every record of the head
// file, and reports every mismatch.
//
// # Reports
//
// Summary (every entry, each dataset's per-unit totals, the most-used
// user), VerifyDir, VerifiedHead, ChangeCap and ExportSnapshot build the
// results of the dprl ledger commands; each has a WriteText method for its
// human-readable form, and its JSON encoding is the command's --json output.
// A dataset unit whose total cannot be computed is reported in the Summary
// in place of its epsilon, never as a number.
//
// # Locks and live reads
//
// One process holds a ledger at a time (Pebble's directory lock). A store
// opened with Options.LiveView serves other processes consistent copies
// of itself on request, through a socket in DIR/live, and a read-only
// Open from another process reads such a copy: the dprl ledger commands
// and dprl report work on a running agent's directory (live.go says why a
// copy, and not a read-only open or the agent's HTTP address). An Open
// refused by the lock wraps ErrLocked and names the holder's pid and
// command; Options.WaitLock waits for the lock instead.
package ledger
