package cf_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"code.cloudfoundry.org/cf-hnc/cf"
)

// entry is a zip entry as the cf CLI writes it: a name, a mode, and the content (a link's target).
type entry struct {
	name    string
	mode    fs.FileMode
	content string
}

// zipOf makes a zip of entries, as the cf CLI zips an app's directory.
func zipOf(entries ...entry) *zip.Reader {
	GinkgoHelper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, e := range entries {
		hdr := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		hdr.SetMode(e.mode)
		f, err := w.CreateHeader(hdr)
		Expect(err).NotTo(HaveOccurred())
		_, err = io.WriteString(f, e.content)
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(w.Close()).To(Succeed())
	r, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	Expect(err).NotTo(HaveOccurred())
	return r
}

// convert converts a zip into a layer and returns the layer's tar.
func convert(zr *zip.Reader, maxSize int64) ([]byte, error) {
	var buf bytes.Buffer
	layer := cf.NewSourceLayer(&buf)
	if err := cf.ZipToLayer(zr, layer, maxSize); err != nil {
		return nil, err
	}
	if err := layer.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// listed lists a layer: each entry's name, type, mode and content or link target.
func listed(layer []byte) []string {
	GinkgoHelper()
	var entries []string
	r := tar.NewReader(bytes.NewReader(layer))
	for {
		hdr, err := r.Next()
		if errors.Is(err, io.EOF) {
			return entries
		}
		Expect(err).NotTo(HaveOccurred())
		Expect(hdr.ModTime.Equal(cf.SourceModTime)).To(BeTrue(), hdr.Name)
		content, err := io.ReadAll(r)
		Expect(err).NotTo(HaveOccurred())
		switch hdr.Typeflag {
		case tar.TypeSymlink:
			entries = append(entries, fmt.Sprintf("%s -> %s %o", hdr.Name, hdr.Linkname, hdr.Mode))
		default:
			entries = append(entries, fmt.Sprintf("%s %o %q", hdr.Name, hdr.Mode, content))
		}
	}
}

var _ = Describe("converting the cf CLI's zip into a source layer", func() {
	It("keeps the entries, their modes and links, with one modification time", func() {
		layer, err := convert(zipOf(
			entry{"bin/", fs.ModeDir | 0o750, ""},
			entry{"bin/run", 0o755, "#!/bin/sh\n"},
			entry{"Procfile", 0o644, "web: bin/run\n"},
			entry{"windows.txt", 0, "made on Windows"},
			entry{"start", fs.ModeSymlink | 0o777, "bin/run"},
			entry{"a/../b.txt", 0o600, "cleaned"},
		), 1<<20)
		Expect(err).NotTo(HaveOccurred())
		Expect(listed(layer)).To(Equal([]string{
			`bin/ 750 ""`,
			`bin/run 755 "#!/bin/sh\n"`,
			`Procfile 644 "web: bin/run\n"`,
			`windows.txt 644 "made on Windows"`,
			`start -> bin/run 777`,
			`b.txt 600 "cleaned"`,
		}))
	})

	DescribeTable("refuses a zip that cannot be an app's source",
		func(zr func() *zip.Reader, maxSize int64, message string) {
			_, err := convert(zr(), maxSize)
			Expect(err).To(MatchError(cf.ErrInvalidZip))
			Expect(err).To(MatchError(message))
		},
		Entry("an entry climbing out", func() *zip.Reader { return zipOf(entry{"../../etc/cron.d/x", 0o644, "x"}) }, int64(1<<20),
			`invalid package zip: entry "../../etc/cron.d/x" lies outside the app's directory`),
		Entry("an entry climbing out after a directory", func() *zip.Reader { return zipOf(entry{"a/../../x", 0o644, "x"}) }, int64(1<<20),
			`invalid package zip: entry "a/../../x" lies outside the app's directory`),
		Entry("an absolute entry", func() *zip.Reader { return zipOf(entry{"/etc/passwd", 0o644, "x"}) }, int64(1<<20),
			`invalid package zip: entry "/etc/passwd" has an absolute path`),
		Entry("an entry below a link", func() *zip.Reader {
			return zipOf(entry{"etc", fs.ModeSymlink | 0o777, "/etc"}, entry{"etc/passwd", 0o644, "x"})
		}, int64(1<<20), `invalid package zip: entry "etc/passwd" lies below the symbolic link "etc"`),
		Entry("files larger than the bound", func() *zip.Reader {
			return zipOf(entry{"a", 0o644, "12345"}, entry{"b", 0o644, "67890"})
		}, int64(9), `invalid package zip: its files add up to more than 9 bytes`),
	)
})
