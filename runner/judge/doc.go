// Package judge fixes a worker's result as a commit of the judge's own and prepares
// the judge's view of it: the directory the checks (verify commands, test criteria,
// held-out tests) run in. The worker's workspace is read, never written.
//
// The store (Store, store.go) is a bare git repository of the judge's under the data
// dir, <data>/judge/git, that no worker can reach; every git command here runs
// against it with no configuration, hooks or attributes of the worker's. A snapshot
// (Store.Snapshot, snapshot.go) records a directory's files as a commit in it.
//
// Before the first worker of a task runs, the runner takes the base: a snapshot of
// the workspace (with the workspace's commit imported as its parent when it is a
// checkout) and, when the contract runs commands, the base's Env (PrepareEnv, env.go):
// a judge-owned copy of the workspace as it stands then, its ignored dependency trees
// and caches included, shared by the tasks whose bases have the same key (EnvKey) and
// never written once in place.
//
// Once every process of the worker is gone, the runner takes the candidate: a
// snapshot of the workspace with the base as parent, under the base's ignore rules
// (IgnoreFrom), never the .gitignore files the worker wrote, plus the contract's
// output file whatever they say. What the candidate's tree holds is what is judged
// and, when the task is verified, what lands.
//
// The view (OpenView, treeview.go and apply.go) is an overlay mount with the Env as
// its lower layer and a layer of the view's own on top (a copy of the Env where the
// runner may not mount). Into it go the changes from the base's tree to the
// candidate's, except changes to protected paths (rules.go): with Restore those keep
// the base's version, or for a file protected in part (PartFunc, see fileparts) the
// worker's with the protected parts as they were at base (protected.go); either way
// each is reported with a short diff. Then the judge's own files (File: held-out
// tests, canaries) are added. Whatever the checks write lands in the view's layer, so
// the Env serves every later view as it was. A view gets a git repository of the
// judge's making (Store.ViewGit, viewgit.go): HEAD is the candidate's tree on the
// worker's HEAD, nothing of the worker's git directory is used. Every write into a
// view goes through openat2 beneath its root with no symbolic link followed
// (fs_linux.go), so a link in the candidate cannot aim one outside it. Views a dead
// runner left are removed when a runner starts (RecoverViews).
//
// Deleted: the judge of earlier versions made its view in the worker's workspace
// itself, rewriting protected files in place from a base copy of the protected files
// (<data>/work/meta/<task>/judge/base) and putting the worker's versions back from a
// journal afterwards. None of that is left but RecoverAll (upgrade.go), which puts
// back once, at a runner's start, a workspace a runner of that version left as its
// view when it died mid-check. An upgrade leaves the old base copies in place, unread
// (they may be removed); a task begun under that version takes its base snapshot from
// its workspace as its earlier attempts left it.
package judge
