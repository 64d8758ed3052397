package cf_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

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
		Entry("empty files whose tar headers are larger than the bound", func() *zip.Reader {
			return zipOf(entry{"a", 0o644, ""}, entry{"b", 0o644, ""}, entry{"c", 0o644, ""})
		}, int64(1024), `invalid package zip: its files add up to more than 1024 bytes`),
		Entry("an entry twice", func() *zip.Reader {
			return zipOf(entry{"Procfile", 0o644, "web: a"}, entry{"./Procfile", 0o644, "web: b"})
		}, int64(1<<20), `invalid package zip: entry "./Procfile" comes twice`),
	)
})

// zipBytes makes a zip whose entries are written by write.
func zipBytes(write func(*zip.Writer)) []byte {
	GinkgoHelper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	write(w)
	Expect(w.Close()).To(Succeed())
	return buf.Bytes()
}

// openZip opens zipped as the CF API opens an upload.
func openZip(zipped []byte) error {
	_, err := cf.OpenZip(bytes.NewReader(zipped), int64(len(zipped)))
	return err
}

var _ = Describe("opening the cf CLI's zip", func() {
	It("opens the zip of an app", func() {
		Expect(openZip(zipBytes(func(w *zip.Writer) {
			for _, name := range []string{"Procfile", "bin/run", "public/index.html"} {
				f, err := w.Create(name)
				Expect(err).NotTo(HaveOccurred())
				_, err = io.WriteString(f, strings.Repeat("content ", 100))
				Expect(err).NotTo(HaveOccurred())
			}
		}))).To(Succeed())
	})

	It("refuses a zip of more entries than an app has, before converting any", func() {
		Expect(openZip(zipBytes(func(w *zip.Writer) {
			for i := range cf.MaxZipEntries + 1 {
				_, err := w.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("f%d", i), Method: zip.Store})
				Expect(err).NotTo(HaveOccurred())
			}
		}))).To(MatchError("invalid package zip: it has more than 100000 entries"))
	})

	It("stops reading a directory of entries larger than it may hold, before Go's reader holds it whole", func() {
		// A comment of each entry's own makes the directory large with few entries: Go's zip
		// reader reads the whole directory, and past the count that the zip states, before a
		// caller can count its entries.
		comment := strings.Repeat("c", 60<<10)
		Expect(openZip(zipBytes(func(w *zip.Writer) {
			for i := range 300 {
				_, err := w.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("f%d", i), Method: zip.Store, Comment: comment})
				Expect(err).NotTo(HaveOccurred())
			}
		}))).To(MatchError("invalid package zip: its directory of entries is larger than 16777216 bytes"))
	})

	It("refuses an entry whose name is longer than a path", func() {
		Expect(openZip(zipBytes(func(w *zip.Writer) {
			_, err := w.Create(strings.Repeat("d/", 2049))
			Expect(err).NotTo(HaveOccurred())
		}))).To(MatchError("invalid package zip: an entry's name is longer than 4096 bytes"))
	})

	It("refuses files that unpack to a hundred times the zip's size, once they are large", func() {
		zeros := func(size int) []byte {
			return zipBytes(func(w *zip.Writer) {
				f, err := w.CreateHeader(&zip.FileHeader{Name: "zeros", Method: zip.Deflate})
				Expect(err).NotTo(HaveOccurred())
				_, err = f.Write(make([]byte, size))
				Expect(err).NotTo(HaveOccurred())
			})
		}
		Expect(openZip(zeros(1<<20))).To(Succeed(), "a small file of zeros unpacks to a thousand times its zip, and is no threat")
		Expect(openZip(zeros(65 << 20))).To(MatchError("invalid package zip: its files unpack to more than 100 times its size"))
	})
})
