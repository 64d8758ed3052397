package cf

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
)

// ErrInvalidZip is the error of a zip that cannot be an app's source: unreadable, too large
// unpacked, or with an entry that would land outside the app's directory.
var ErrInvalidZip = errors.New("invalid package zip")

// maxLinkTarget bounds the target of a symbolic link, which a zip holds as the entry's content.
const maxLinkTarget = 4096

// ZipToLayer writes the entries of a zip of an app's source, as the cf CLI uploads it (directories
// end in "/"; a symbolic link is an entry with the link mode whose content is its target), into
// layer, in the zip's order. An entry without permission bits (a zip made on Windows) gets 0644,
// a directory 0755. It refuses, with ErrInvalidZip, an entry whose path is absolute, climbs out
// with "..", or lies below a symbolic link of the zip (unpacking it would write through the
// link), and a zip whose files add up to more than maxSize bytes; Go's zip reader refuses an
// entry longer than its header says.
func ZipToLayer(zr *zip.Reader, layer *SourceLayer, maxSize int64) error {
	var total uint64
	for _, f := range zr.File {
		if total += f.UncompressedSize64; total > uint64(maxSize) {
			return fmt.Errorf("%w: its files add up to more than %d bytes", ErrInvalidZip, maxSize)
		}
	}
	links := map[string]bool{}
	for _, f := range zr.File {
		name, err := entryName(f.Name, links)
		if err != nil {
			return err
		}
		if err := writeEntry(layer, f, name, links); err != nil {
			return err
		}
	}
	return nil
}

// entryName is the path of a zip entry inside the app's directory, cleaned and without a
// trailing slash.
func entryName(raw string, links map[string]bool) (string, error) {
	name := path.Clean(strings.TrimSuffix(raw, "/"))
	switch {
	case path.IsAbs(raw) || strings.HasPrefix(raw, `\`):
		return "", fmt.Errorf("%w: entry %q has an absolute path", ErrInvalidZip, raw)
	case name == ".." || strings.HasPrefix(name, "../"):
		return "", fmt.Errorf("%w: entry %q lies outside the app's directory", ErrInvalidZip, raw)
	case name == ".":
		return "", fmt.Errorf("%w: entry %q has no name", ErrInvalidZip, raw)
	}
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		if links[dir] {
			return "", fmt.Errorf("%w: entry %q lies below the symbolic link %q", ErrInvalidZip, raw, dir)
		}
	}
	return name, nil
}

func writeEntry(layer *SourceLayer, f *zip.File, name string, links map[string]bool) error {
	mode := f.Mode()
	switch {
	case mode.IsDir():
		return layer.Dir(name, withDefault(mode, 0o755))
	case mode&fs.ModeSymlink != 0:
		target, err := readLinkTarget(f)
		if err != nil {
			return err
		}
		links[name] = true
		return layer.Symlink(name, target, mode)
	case !mode.IsRegular():
		return fmt.Errorf("%w: entry %q is neither a file, a directory nor a symbolic link", ErrInvalidZip, f.Name)
	}
	content, err := f.Open()
	if err != nil {
		return fmt.Errorf("%w: entry %q: %v", ErrInvalidZip, f.Name, err)
	}
	defer content.Close()
	return layer.File(name, withDefault(mode, 0o644), int64(f.UncompressedSize64), zipContent{content, f.Name})
}

func withDefault(mode, fallback fs.FileMode) fs.FileMode {
	if mode.Perm() == 0 {
		return fallback
	}
	return mode
}

func readLinkTarget(f *zip.File) (string, error) {
	content, err := f.Open()
	if err != nil {
		return "", fmt.Errorf("%w: entry %q: %v", ErrInvalidZip, f.Name, err)
	}
	defer content.Close()
	target, err := io.ReadAll(io.LimitReader(zipContent{content, f.Name}, maxLinkTarget+1))
	switch {
	case err != nil:
		return "", err
	case len(target) == 0 || len(target) > maxLinkTarget:
		return "", fmt.Errorf("%w: symbolic link %q has no target, or one longer than %d bytes", ErrInvalidZip, f.Name, maxLinkTarget)
	}
	return string(target), nil
}

// zipContent reads an entry's content; its errors (a corrupt entry, one longer than its header
// says) are the zip's, ErrInvalidZip.
type zipContent struct {
	r    io.Reader
	name string
}

func (z zipContent) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: entry %q: %v", ErrInvalidZip, z.name, err)
	}
	return n, err
}
