package cfapi

import (
	"fmt"
	"os"
	"sync"
	"time"

	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
)

// Uploads are staged on disk while they are converted and pushed: the zip that the cf CLI sends
// and the layer made of it, each up to maxPackageSize. They go to a scratch directory (in a pod,
// a volume of bounded size: the root file system is read-only), and all the uploads of a replica
// at once may hold at most a budget of bytes there: the writes of an upload take their room
// from it as they go, and an upload that finds none is refused at once, with everything it wrote
// removed, rather than filling the node's disk.

// scratchRetry is how soon a refused upload may try again, as Retry-After says.
const scratchRetry = 30 * time.Second

// scratch is the scratch directory of uploads and its budget.
type scratch struct {
	dir string

	mu          sync.Mutex
	size, taken int64
}

func newScratch(dir string, size int64) *scratch {
	return &scratch{dir: dir, size: size}
}

// take takes n bytes of the budget, if there is room for them.
func (s *scratch) take(n int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.taken+n > s.size {
		return false
	}
	s.taken += n
	return true
}

func (s *scratch) give(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taken -= n
}

// noRoom is the answer to an upload that the budget has no room for.
func (s *scratch) noRoom() *cferror.Error {
	e := cferror.ServiceUnavailable(fmt.Sprintf("The CF API has no room for this upload now: the uploads in progress on this replica "+
		"may hold at most %d bytes on disk at once (cf-api --scratch-size); try again later", s.size))
	e.RetryAfter = scratchRetry
	return e
}

// upload is the scratch space of one upload: a directory of its own, and the bytes it took.
type upload struct {
	scratch *scratch
	dir     string
	taken   int64
}

// start makes the directory of an upload. A scratch directory that cannot hold it (read-only,
// missing) is the API's failure, said clearly.
func (s *scratch) start() (*upload, error) {
	dir, err := os.MkdirTemp(s.dir, "cfapi-upload-")
	if err != nil {
		e := cferror.ServiceUnavailable(fmt.Sprintf("The CF API cannot stage uploads in its scratch directory %s (cf-api --scratch-dir): %v", s.dir, err))
		e.RetryAfter = scratchRetry
		return nil, e
	}
	return &upload{scratch: s, dir: dir}, nil
}

// create makes a file of the upload whose writes take their room from the budget.
func (u *upload) create(name string) (*budgetedFile, error) {
	f, err := os.Create(u.dir + "/" + name)
	if err != nil {
		return nil, err
	}
	return &budgetedFile{file: f, upload: u}, nil
}

// done removes what the upload wrote and gives its room back; nil does nothing.
func (u *upload) done() {
	if u == nil {
		return
	}
	_ = os.RemoveAll(u.dir)
	u.scratch.give(u.taken)
}

// budgetedFile is a file of an upload that writes only what the budget has room for. It is no
// io.ReaderFrom, which io.Copy would write through around Write.
type budgetedFile struct {
	file   *os.File
	upload *upload
}

// Write writes p once the budget has room for it; else it writes nothing and fails with the
// answer that says so.
func (f *budgetedFile) Write(p []byte) (int, error) {
	if !f.upload.scratch.take(int64(len(p))) {
		return 0, f.upload.scratch.noRoom()
	}
	f.upload.taken += int64(len(p))
	return f.file.Write(p)
}

func (f *budgetedFile) Close() error { return f.file.Close() }
func (f *budgetedFile) Name() string { return f.file.Name() }
