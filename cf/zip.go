package cf

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"strings"
)

// ErrInvalidZip is the error of a zip that cannot be an app's source: unreadable, too large
// unpacked, with too many entries, or with an entry that would land outside the app's directory.
var ErrInvalidZip = errors.New("invalid package zip")

// maxLinkTarget bounds the target of a symbolic link, which a zip holds as the entry's content.
const maxLinkTarget = 4096

// What reading a zip of an app's source may cost, beyond the size of its files (ZipToLayer's
// maxSize): Go's zip reader holds every entry's header in memory, about 200 bytes and its name,
// and reads the whole central directory before a caller can count the entries.
const (
	// MaxZipEntries bounds the entries of a zip: an app of a hundred thousand files is large.
	MaxZipEntries = 100_000
	// maxZipDirectory bounds the central directory, which lists every entry: MaxZipEntries
	// entries with names of about 100 bytes fit, and Go's reader holds at most about five times
	// these bytes.
	maxZipDirectory = 16 << 20
	// zipEndSearch is what Go's reader reads, besides the directory, to find it: the last 65
	// KiB, after the last KiB, and a buffer of the directory.
	zipEndSearch = 70 << 10
	// maxEntryName bounds an entry's name: Linux's longest path.
	maxEntryName = 4096
	// maxCompressionRatio bounds how many times its own size a zip may unpack to, once it unpacks
	// to more than ratioFree: a small upload may not make the API write and push a layer a
	// thousand times its size.
	maxCompressionRatio = 100
	ratioFree           = 64 << 20
)

// OpenZip reads the directory of the zip in r, of size bytes, as the zip of an app's source. It
// refuses, with ErrInvalidZip, a zip whose central directory is larger than Go's reader may hold
// (it stops reading it there), that has more than MaxZipEntries entries or a name longer than a
// path, or whose files unpack to more than maxCompressionRatio times its size. Other errors are
// the zip reader's: r is no zip.
func OpenZip(r io.ReaderAt, size int64) (*zip.Reader, error) {
	directory := &boundedReaderAt{r: r, left: maxZipDirectory + zipEndSearch}
	zr, err := zip.NewReader(directory, size)
	if errors.Is(err, errDirectoryTooLarge) {
		return nil, fmt.Errorf("%w: its directory of entries is larger than %d bytes", ErrInvalidZip, maxZipDirectory)
	}
	if err != nil {
		return nil, err
	}
	directory.left = math.MaxInt64 // the entries' contents are bounded by ZipToLayer
	if len(zr.File) > MaxZipEntries {
		return nil, fmt.Errorf("%w: it has more than %d entries", ErrInvalidZip, MaxZipEntries)
	}
	var unpacked uint64
	for _, f := range zr.File {
		if len(f.Name) > maxEntryName {
			return nil, fmt.Errorf("%w: an entry's name is longer than %d bytes", ErrInvalidZip, maxEntryName)
		}
		unpacked += min(f.UncompressedSize64, math.MaxUint64-unpacked)
	}
	if unpacked > ratioFree && unpacked/maxCompressionRatio > uint64(size) {
		return nil, fmt.Errorf("%w: its files unpack to more than %d times its size", ErrInvalidZip, maxCompressionRatio)
	}
	return zr, nil
}

var errDirectoryTooLarge = errors.New("zip directory too large")

// boundedReaderAt reads at most left bytes of r; past them it fails with errDirectoryTooLarge.
type boundedReaderAt struct {
	r    io.ReaderAt
	left int64
}

func (b *boundedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if int64(len(p)) > b.left {
		return 0, errDirectoryTooLarge
	}
	b.left -= int64(len(p))
	return b.r.ReadAt(p, off)
}

// ZipToLayer writes the entries of a zip of an app's source (OpenZip), as the cf CLI uploads it
// (directories end in "/"; a symbolic link is an entry with the link mode whose content is its
// target), into layer, in the zip's order. An entry without permission bits (a zip made on
// Windows) gets 0644, a directory 0755. It refuses, with ErrInvalidZip, an entry whose path is
// absolute, climbs out with "..", lies below a symbolic link of the zip (unpacking it would
// write through the link) or comes twice, and a zip whose layer would be larger than maxSize
// bytes, each entry counted with its tar headers; Go's zip reader refuses an entry longer than
// its header says.
func ZipToLayer(zr *zip.Reader, layer *SourceLayer, maxSize int64) error {
	var total uint64
	for _, f := range zr.File {
		if f.UncompressedSize64 > uint64(maxSize) {
			return fmt.Errorf("%w: its files add up to more than %d bytes", ErrInvalidZip, maxSize)
		}
		if total += layerBytes(f); total > uint64(maxSize) {
			return fmt.Errorf("%w: its files add up to more than %d bytes", ErrInvalidZip, maxSize)
		}
	}
	links, written := map[string]bool{}, map[string]bool{}
	for _, f := range zr.File {
		name, err := entryName(f.Name, links)
		if err != nil {
			return err
		}
		if written[name] {
			return fmt.Errorf("%w: entry %q comes twice", ErrInvalidZip, f.Name)
		}
		written[name] = true
		if err := writeEntry(layer, f, name, links); err != nil {
			return err
		}
	}
	return nil
}

// tarBlock is the unit of a tar file: headers take one, contents whole ones.
const tarBlock = 512

// layerBytes is what an entry takes in the layer, at most: its header, its content in whole
// blocks, and for a name longer than a header holds (100 bytes), a header and blocks of its own.
// size has been checked to be far from overflowing.
func layerBytes(f *zip.File) uint64 {
	blocks := func(n uint64) uint64 { return (n + tarBlock - 1) / tarBlock * tarBlock }
	n := tarBlock + blocks(f.UncompressedSize64)
	if len(f.Name) > 100 {
		n += tarBlock + blocks(uint64(len(f.Name)))
	}
	return n
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
