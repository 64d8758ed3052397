package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"code.cloudfoundry.org/cf-hnc/cf"
)

// packedSource is an app's directory packed as cf push uploads it: the files that .cfignore and
// the cf CLI's default exclusions let through, as one tar layer in a temporary file.
type packedSource struct {
	dir string
	// root opens what dir holds, and nothing outside it, while the directory is packed.
	root *os.Root
	// tarFile holds the layer; remove it with cleanup.
	tarFile string
	// layer counts the regular files and symbolic links packed, and their size.
	layer *cf.SourceLayer
	// ignored counts the files and directories left out.
	ignored int
}

// packSource packs dir. It reads every file, so an unreadable one fails here, before anything
// is uploaded or created. It reads nothing outside dir, whatever the directory holds or becomes
// while it is packed: every file is opened within dir (os.Root, which refuses a path that a
// link takes outside it) and must be the file that the walk found (a link, or another file, put
// in its place meanwhile, fails the push): in a workspace that others may write, a link to
// ~/.kube/config must not be packed and pushed (review 3, N19).
func packSource(dir string) (p *packedSource, err error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("-p %q: %w", dir, unwrapPathError(err))
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("-p %q is not a directory: push the directory that holds the app's source", dir)
	}
	if err := readable(dir); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", dir, unwrapPathError(err))
	}
	defer root.Close()
	rules, err := readIgnoreRules(root)
	if err != nil {
		return nil, err
	}
	out, err := os.CreateTemp("", "kubectl-cf-package-*.tar")
	if err != nil {
		return nil, fmt.Errorf("packing %q: %w", dir, err)
	}
	p = &packedSource{dir: dir, root: root, tarFile: out.Name()}
	defer func() {
		err = errors.Join(err, out.Close())
		if err != nil {
			p.cleanup()
			p = nil
		}
	}()
	// The layer is written while the directory is walked, and may be in it (pushing from the
	// temporary directory): it must not pack itself.
	self, err := out.Stat()
	if err != nil {
		return p, err
	}
	p.layer = cf.NewSourceLayer(out)
	if err := fs.WalkDir(root.FS(), ".", func(rel string, entry fs.DirEntry, err error) error {
		file := filepath.Join(dir, filepath.FromSlash(rel))
		if err != nil {
			return fmt.Errorf("reading %q: %w", file, unwrapPathError(err))
		}
		if rel == "." {
			return nil
		}
		if info, err := entry.Info(); err == nil && os.SameFile(info, self) {
			return nil
		}
		if rules.ignored(rel, entry.IsDir()) {
			p.ignored++
			if entry.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		return p.add(file, rel, entry)
	}); err != nil {
		return p, err
	}
	if err := p.layer.Close(); err != nil {
		return p, fmt.Errorf("packing %q: %w", dir, err)
	}
	switch {
	case p.layer.Files == 0 && p.ignored == 0:
		return p, fmt.Errorf("directory %q is empty: there is nothing to push", dir)
	case p.layer.Files == 0:
		return p, fmt.Errorf("directory %q has nothing to push: .cfignore and the default exclusions (%s) leave out all it holds",
			dir, strings.Join(defaultIgnored, ", "))
	}
	return p, nil
}

// readable refuses a directory whose entries cannot be listed.
func readable(dir string) error {
	f, err := os.Open(dir)
	if err == nil {
		_, err = f.ReadDir(1)
		f.Close()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading %q: %w", dir, unwrapPathError(err))
	}
	return nil
}

// readIgnoreRules reads the cf CLI's default exclusions and the .cfignore of the directory of
// root, if any.
func readIgnoreRules(root *os.Root) (ignoreRules, error) {
	rules, err := parseIgnore(strings.NewReader(strings.Join(defaultIgnored, "\n")), "the default exclusions")
	if err != nil {
		return nil, err
	}
	file, err := root.Open(".cfignore")
	if errors.Is(err, fs.ErrNotExist) {
		return rules, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading .cfignore: %w", unwrapPathError(err))
	}
	defer file.Close()
	own, err := parseIgnore(file, ".cfignore")
	return append(rules, own...), err
}

// add writes a directory, a regular file or a symbolic link (as a link, as the cf CLI packs
// it) into the layer: rel names it within the root, file for a person. Other kinds of files
// (sockets, devices) cannot be part of an app. A regular file is packed only if the file opened
// is the one the walk found (entry).
func (p *packedSource) add(file, rel string, entry fs.DirEntry) error {
	info, err := entry.Info()
	if err != nil {
		return fmt.Errorf("reading %q: %w", file, unwrapPathError(err))
	}
	switch {
	case info.IsDir():
		return p.layer.Dir(rel, info.Mode())
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := p.root.Readlink(rel)
		if err != nil {
			return fmt.Errorf("reading %q: %w", file, unwrapPathError(err))
		}
		return p.layer.Symlink(rel, target, info.Mode())
	case !info.Mode().IsRegular():
		p.ignored++
		return nil
	}
	content, err := p.root.Open(rel)
	if err != nil {
		return fmt.Errorf("reading %q: %w", file, unwrapPathError(err))
	}
	defer content.Close()
	opened, err := content.Stat()
	if err != nil {
		return fmt.Errorf("reading %q: %w", file, unwrapPathError(err))
	}
	if !os.SameFile(info, opened) {
		return fmt.Errorf("reading %q: it was replaced while it was packed (by a link or another file): nothing is pushed; push again", file)
	}
	if err := p.layer.File(rel, info.Mode(), opened.Size(), content); err != nil {
		return fmt.Errorf("reading %q: %w", file, unwrapPathError(err))
	}
	return nil
}

// cleanup removes the temporary layer.
func (p *packedSource) cleanup() {
	if p != nil {
		_ = os.Remove(p.tarFile)
	}
}

func (p *packedSource) String() string {
	s := fmt.Sprintf("%d files, %s", p.layer.Files, byteSize(p.layer.Bytes))
	if p.ignored > 0 {
		s += fmt.Sprintf("; %d left out by .cfignore and the default exclusions", p.ignored)
	}
	return s
}

// unwrapPathError drops the path that an *fs.PathError repeats, when the message names it.
func unwrapPathError(err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err
	}
	return err
}

// byteSize is a size for a person.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
