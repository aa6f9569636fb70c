# The devices of the minimal qemu-system-aarch64 (configure
# --without-default-devices --with-devices-aarch64=<this file>): the virt
# machine, which brings the KVM GICv3 and its ITS, PL011, virtio-mmio and
# the PCIe host.  "imply" is ignored in this mode, so every virtio device
# the tests use is listed: virtio-rng and the PCIe root ports are the
# virsh tier's (libvirt puts each PCIe device of an aarch64 virt domain
# behind a pcie-root-port).
CONFIG_ARM_VIRT=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_BLK=y
CONFIG_VIRTIO_SERIAL=y
CONFIG_VIRTIO_RNG=y
CONFIG_PCIE_PORT=y
