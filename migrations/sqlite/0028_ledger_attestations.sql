-- The signed attestation (a DSSE envelope around an in-toto Statement, issue #35) of a
-- task.complete: kept in the row whose message names its digest, written in the same
-- transaction, so an attestation never exists without the entry that records it.
-- NULL for every other type and for completions written before attestations existed.
ALTER TABLE ledger_entries ADD COLUMN attestation BLOB;
