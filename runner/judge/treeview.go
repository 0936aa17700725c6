package judge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/countersign/countersign/models"
)

// The judge's view of a candidate is a directory the worker never wrote: the Env of the
// base (PrepareEnv) as the lower layer, and on top, in a layer of the view's own, every
// change from the base's tree to the candidate's except changes to protected paths
// (which keep the base's version, or for a file protected in part the judged one),
// plus the judge's extra files (held-out tests, canaries). The checks run there.
//
// Decision, by measurement (BenchmarkJudgeView10k): an overlay mount costs about a
// millisecond whatever the size of the Env, and writes made in the view, by the
// judge or by the code under test, land in the upper layer only (the kernel copies a
// file up before it is changed), so the Env stays as it was for every later view. A
// runner that may not mount (no CAP_SYS_ADMIN) falls back to a copy of the Env,
// reflinked where the file system can: just as isolated, but it costs a full tree
// copy per view (seconds for a 60,000-file Env on ext4, which has no reflinks).

// ViewRequest says which view to open.
type ViewRequest struct {
	// Env is the base's environment (PrepareEnv): the view's lower layer. It must
	// hold the base's tree: the view shows it wherever the candidate did not change it.
	Env string
	// Dir is the view's own directory (judge-owned, under the task's meta dir, e.g.
	// <meta>/judge/view): it holds the mount point root/ and the upper layer.
	// Whatever an earlier view left there is removed first.
	Dir string
	// Trees reads the judge's object store; Base and Candidate are commits in it.
	Trees           Trees
	Base, Candidate string
	// Rules are the protect patterns. With Restore, a protected path the candidate
	// changed keeps the base's version in the view; without it (tests_may_change) the
	// change is applied and only reported.
	Rules   []Rule
	Restore bool
	// Parts computes files protected in part; nil protects them whole. Names are
	// the package.json scripts and Makefile targets the contract runs.
	Parts PartFunc
	Names []string
	// Extra are the judge's own files (held-out tests, canaries), added last.
	Extra []File
	// DiffLimit bounds each protected change's diff (2 KiB when zero).
	DiffLimit int
	// NoMount makes the view a copy of the Env even where it could be mounted (for
	// tests and for file systems overlayfs refuses).
	NoMount bool
}

// The mechanisms a view is made with.
const (
	MechanismOverlay = "overlay" // an overlay mount over the Env
	MechanismCopy    = "copy"    // a copy of the Env (reflinked where possible)
)

// TreeView is an open judge's view. Close removes it.
type TreeView struct {
	dir, root string
	mechanism string
	mounted   bool
	lock      *os.File // flock'd while the view is up: a live view is never recovered
	closed    bool
}

// viewMarker marks a directory as a view's, for RecoverViews.
const viewMarker = ".countersign-view"

// Root is the directory the checks run in.
func (v *TreeView) Root() string { return v.root }

// Mechanism says how the view was made: MechanismOverlay or MechanismCopy.
func (v *TreeView) Mechanism() string { return v.mechanism }

// OpenView opens the judge's view of req.Candidate (see ViewRequest). It returns the
// protected paths the candidate added, changed or deleted, sorted by path, with short
// diffs. A change the judge cannot apply without following a link or leaving the
// view (a path that climbs out, a link or file where a directory of protected or
// judge's files was) is a *BlockedError. The Env is never written. Call Close when
// the checks are done.
func OpenView(ctx context.Context, req ViewRequest) (*TreeView, []models.ProtectedChange, error) {
	if req.Trees == nil || !filepath.IsAbs(req.Env) || !filepath.IsAbs(req.Dir) {
		return nil, nil, models.Errorf(models.EINVALID, "judge: a view needs its object store and absolute Env and Dir paths")
	}
	if st, err := os.Stat(req.Env); err != nil || !st.IsDir() {
		return nil, nil, fmt.Errorf("judge: the environment %s: %w", req.Env, errors.Join(err, errNotDir(st)))
	}
	p, protected, err := plan(ctx, &req)
	if err != nil {
		return nil, nil, err
	}
	if _, err := recoverView(req.Dir); err != nil {
		return nil, nil, err
	}
	v, err := makeView(ctx, &req)
	if err != nil {
		return nil, nil, err
	}
	if err := p.apply(v.root); err != nil {
		return nil, nil, errors.Join(err, v.Close())
	}
	return v, protected, nil
}

func errNotDir(st os.FileInfo) error {
	if st != nil && !st.IsDir() {
		return errors.New("not a directory")
	}
	return nil
}

// makeView lays out req.Dir and mounts (or copies) the Env at its root.
func makeView(ctx context.Context, req *ViewRequest) (*TreeView, error) {
	if err := os.MkdirAll(req.Dir, 0o750); err != nil {
		return nil, err
	}
	// The marker first: a directory RecoverViews and recoverView remove is a view's.
	if err := os.WriteFile(filepath.Join(req.Dir, viewMarker), nil, 0o640); err != nil {
		return nil, err
	}
	lock, err := lockDir(req.Dir)
	if err != nil {
		return nil, err
	}
	v := &TreeView{dir: req.Dir, root: filepath.Join(req.Dir, "root"), lock: lock}
	for _, d := range []string{"root", "upper", "work"} {
		if err := os.Mkdir(filepath.Join(req.Dir, d), 0o755); err != nil {
			return nil, errors.Join(err, v.Close())
		}
	}
	switch err := v.mount(req); {
	case err == nil:
		return v, nil
	case !errors.Is(err, errNoMount):
		return nil, errors.Join(err, v.Close())
	}
	v.mechanism = MechanismCopy
	if err := copyTree(ctx, req.Env, v.root, nil); err != nil {
		return nil, errors.Join(fmt.Errorf("judge: copying the environment: %w", err), v.Close())
	}
	return v, nil
}

// errNoMount: this runner may not mount an overlay here; the view is a copy.
var errNoMount = errors.New("judge: overlay mounts are not available")

// mount mounts the overlay of the Env at the view's root.
func (v *TreeView) mount(req *ViewRequest) error {
	upper, work := filepath.Join(v.dir, "upper"), filepath.Join(v.dir, "work")
	if defencesOff.shareEnv {
		v.mechanism = "bind"
		if err := unix.Mount(req.Env, v.root, "", unix.MS_BIND, ""); err != nil {
			return err
		}
		v.mounted = true
		return nil
	}
	if req.NoMount {
		return errNoMount
	}
	for _, p := range []string{req.Env, upper, work} {
		// The option string separates with these; a path holding one cannot be named.
		if strings.ContainsAny(p, ",:\\") {
			return errNoMount
		}
	}
	// volatile: the upper layer is thrown away at Close, so it is never synced; without
	// it every unmount syncs the whole file system under it (measured: a quarter of a
	// second on a busy machine).
	opts := "lowerdir=" + req.Env + ",upperdir=" + upper + ",workdir=" + work + ",volatile"
	// No set-id programs and no device files in a view: nothing in it needs them.
	if inUserNamespace() {
		// In a user namespace (unshare -Urm) overlayfs must keep its metadata in
		// user.* extended attributes: without this option it mounts, but cannot
		// mark directories opaque and fails to remove one (EIO).
		opts += ",userxattr"
	}
	err := unix.Mount("overlay", v.root, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts)
	if errors.Is(err, unix.EINVAL) {
		// A kernel before 5.10 has no volatile: the same view, synced at unmount.
		err = unix.Mount("overlay", v.root, "overlay", unix.MS_NOSUID|unix.MS_NODEV, strings.Replace(opts, ",volatile", "", 1))
	}
	switch {
	case err == nil:
		v.mechanism, v.mounted = MechanismOverlay, true
		return nil
	case errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EINVAL):
		// Not allowed (no CAP_SYS_ADMIN), no overlayfs, or a file system overlayfs
		// refuses as a layer.
		return errNoMount
	}
	return fmt.Errorf("judge: mounting the view: %w", err)
}

// inUserNamespace reports whether the runner runs in a user namespace other than the
// initial one, whose uid map is the identity over every id.
func inUserNamespace() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return !(len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295")
}

// Close unmounts the view and removes its directory. A process the checks left
// behind may still hold the mount: it is then detached lazily (gone from every path
// at once, freed when the last process lets go), and its layer is removed anyway;
// such a process can only ever have written the view's own layer, never the Env.
// Close is idempotent.
func (v *TreeView) Close() error {
	if v == nil || v.closed {
		return nil
	}
	if v.mounted {
		if err := unmount(v.root); err != nil {
			return fmt.Errorf("judge: unmounting the view: %w", err)
		}
		v.mounted = false
	}
	if err := removeViewDir(v.dir); err != nil {
		return err
	}
	v.closed = true
	if v.lock != nil {
		v.lock.Close()
	}
	return nil
}

// lockDir takes the lock of a view's directory (or of a journal the previous version
// left, see RecoverAll), failing at once with errViewLive while another process (a
// live runner) holds it. The lock goes with the process, so a runner that died holds
// none.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errViewLive
		}
		return nil, err
	}
	return f, nil
}

// errViewLive: the view is up in a live runner.
var errViewLive = errors.New("judge: the view is up in a live runner")

// unmount unmounts whatever is mounted at root, detaching lazily when it is busy. Not
// a mount point (any more) is fine.
func unmount(root string) error {
	for i := 0; i < 8; i++ { // a mount stacked on the view's (never made by the judge) goes too
		err := unix.Unmount(root, unix.UMOUNT_NOFOLLOW)
		if errors.Is(err, unix.EBUSY) {
			err = unix.Unmount(root, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		}
		switch {
		case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT):
			return nil
		case err != nil:
			return err
		}
	}
	return errors.New("judge: too many mounts stacked on the view")
}

// removeViewDir removes a view's directory once nothing is mounted at its root. A
// process of the checks still writing into a lazily detached layer can race the
// removal for a moment: it is retried.
func removeViewDir(dir string) error {
	var err error
	for i := 0; i < 5; i++ {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("judge: removing the view: %w", err)
}

// recoverView removes the view a runner that died left at dir, unless a live runner
// holds it (then it is an error: one view per directory). It reports whether there
// was one.
func recoverView(dir string) (bool, error) {
	if _, err := os.Lstat(filepath.Join(dir, viewMarker)); errors.Is(err, os.ErrNotExist) {
		entries, err := os.ReadDir(dir)
		switch {
		case errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0):
			return false, nil
		case err != nil:
			return false, err
		}
		// Never remove what is not a view's: the caller named the wrong directory.
		return false, models.Errorf(models.ECONFLICT, "judge: %s is not a view's directory and is not empty", dir)
	}
	lock, err := lockDir(dir)
	if errors.Is(err, errViewLive) {
		return false, models.Errorf(models.ECONFLICT, "judge: a view is open at %s in a live runner", dir)
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer lock.Close()
	if err := unmount(filepath.Join(dir, "root")); err != nil {
		return false, fmt.Errorf("judge: unmounting a view left at %s: %w", dir, err)
	}
	return true, removeViewDir(dir)
}

// RecoverViews removes every view a runner that died left under metaRoot
// (<data>/work/meta: views at <meta>/<task>/judge/<name>), unmounting it first; views
// still held by a live runner are left alone. Call it when a runner starts, before it
// opens views. It returns the directories it removed.
func RecoverViews(metaRoot string) ([]string, error) {
	marks, err := filepath.Glob(filepath.Join(metaRoot, "*", "judge", "*", viewMarker))
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, m := range marks {
		dir := filepath.Dir(m)
		ok, err := recoverView(dir)
		var me *models.Error
		switch {
		case errors.As(err, &me) && me.Code == models.ECONFLICT:
		case err != nil:
			errs = append(errs, err)
		case ok:
			done = append(done, dir)
		}
	}
	return done, errors.Join(errs...)
}
