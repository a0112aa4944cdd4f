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
// first start (a 0600 file beside the store); the raw id is never stored. A
// user's counter records how many updates they took part in and the sum of
// 1/z^2 over those updates, from which their epsilon is exact (Gaussian
// mechanisms compose exactly as Gaussian DP; see package accountant).
//
// Offline runs are charged against the dataset they read (its content hash):
// Store.ChargeOffline refuses a run whose composition with the dataset's
// earlier runs would exceed the dataset's cap, before the caller reads the
// data.
//
// Verify recomputes the hash chain, every epsilon from the recorded events,
// the head pointer, the snapshots the entries pay for and the user counters,
// and reports every mismatch.
package ledger
