// Package procs keeps the promise that a worker's processes never outlive the runner
// that started them, and that a re-run of a task never overlaps an earlier attempt of
// it on the same host.
//
// A runner killed with SIGKILL cannot kill its workers' process groups: they live on,
// orphaned, and would keep writing into workspaces while the task is re-run. So every
// group a runner starts is recorded in a small file under one directory of the data
// dir (Registry.Track), and the record is removed when the run is over. The next runner
// on the host reaps what is still recorded (Registry.ReapAll) before it claims
// anything, and every runner reaps a task's earlier groups before it starts a new
// attempt of it (Registry.ReapTask).
//
// # Identity
//
// A recorded pid is only a number: by the time it is reaped, the group may be long gone
// and the number reused by an unrelated process. A record therefore names its group by
// host name, boot id (/proc/sys/kernel/random/boot_id), process group id, session id
// and the start time of the group leader in clock ticks since boot (field 22 of
// /proc/<pid>/stat). A record is judged against /proc as follows:
//
//   - Another host name: the record is not ours to judge (its pids mean nothing here).
//     It is left alone.
//   - Another boot id: the host rebooted since, so every process of the record is gone.
//     The record is deleted; nothing is killed.
//   - Same boot, and a process whose pid is the recorded group id exists but started at
//     another time: the pid was reused by a new process, not ours. The record is
//     deleted; nothing is killed.
//   - Same boot, and either the leader with the recorded start time exists, or no
//     process has the leader's pid but processes of the recorded group id (field 5 of
//     /proc/<pid>/stat) and session (field 6) live on: the group is ours, because the
//     kernel does not reuse a pid while it is still a process group id. The group gets
//     SIGKILL (kill(-pgid)), every member (and the leader) SIGKILL individually too, and
//     the reaper waits until none of them is left before it deletes the record.
//   - Otherwise no process of the group is left: the record is deleted.
//
// Zombies count as gone: they are dead, and reaping them is their parent's business.
//
// # Owners
//
// Several runners on one host may share the data dir. Each Registry holds an exclusive
// flock(2) on a lock file of its own for as long as its process lives, and every record
// names that lock file as its owner. ReapAll reaps only records whose owner no longer
// holds its lock (the runner died, or closed its registry): a runner that starts next
// to a live one must not kill the live one's workers. ReapTask ignores owners, because
// a new attempt must never overlap an old one, even one whose runner still lives after
// losing the task's lease.
//
// Processes that leave their group (setsid, setpgid) escape all of this; confining
// workers so that they cannot is the sandbox's job. On systems other than Linux there
// is no /proc to judge records by: the Registry records and reaps nothing (Supported is
// false).
package procs
