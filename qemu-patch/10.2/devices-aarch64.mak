# Added to ../devices-aarch64.mak for QEMU 10.2 (qp_configure): the virt
# machine selects ACPI_CXL there, whose hw/acpi/cxl.c calls
# cxl_fmws_get_all_sorted(), which only CONFIG_CXL's cxl-host.c defines
# (cxl-host-stubs.c does not); CXL in turn needs CXL_MEM_DEVICE's
# cxl_type3.c (its stubs lack what cxl-mailbox-utils.c calls), and
# depends on PXB.  All three are only "default y", which
# --without-default-devices drops: without them qemu-system-aarch64 does
# not link.
CONFIG_PXB=y
CONFIG_CXL=y
CONFIG_CXL_MEM_DEVICE=y
