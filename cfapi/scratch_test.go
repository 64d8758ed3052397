package cfapi

import (
	"errors"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
)

var _ = Describe("the scratch space of uploads", func() {
	It("is shared by every upload at once: the room one holds, another cannot take until the first is done", func() {
		s := newScratch(GinkgoT().TempDir(), 10)
		first, err := s.start()
		Expect(err).NotTo(HaveOccurred())
		firstZip, err := first.create("package.zip")
		Expect(err).NotTo(HaveOccurred())
		Expect(firstZip.Write(make([]byte, 8))).To(Equal(8))

		second, err := s.start()
		Expect(err).NotTo(HaveOccurred())
		secondZip, err := second.create("package.zip")
		Expect(err).NotTo(HaveOccurred())
		_, err = secondZip.Write(make([]byte, 4))
		var refused *cferror.Error
		Expect(errors.As(err, &refused)).To(BeTrue())
		Expect(refused.Status).To(Equal(503))

		Expect(firstZip.Close()).To(Succeed())
		first.done()
		Expect(first.dir).NotTo(BeADirectory(), "what the upload wrote is gone")
		Expect(secondZip.Write(make([]byte, 4))).To(Equal(4), "its room is free again")
		Expect(secondZip.Close()).To(Succeed())
		second.done()
		Expect(os.ReadDir(s.dir)).To(BeEmpty())
	})
})
