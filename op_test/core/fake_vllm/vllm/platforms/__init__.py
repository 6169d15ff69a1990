"""vLLM's current platform: a CUDA platform that reads the GPU through NVML (tests change its fields)."""

from types import SimpleNamespace


class NvmlCudaPlatform:
    def __init__(self):
        self.cuda = True
        self.capability = (9, 0)
        self.name = "NVIDIA H100 80GB HBM3"
        self.nvml_reads = 0

    def is_cuda(self):
        return self.cuda

    def get_device_capability(self, device_id=0):
        self.nvml_reads += 1
        return SimpleNamespace(major=self.capability[0], minor=self.capability[1])

    def get_device_name(self, device_id=0):
        self.nvml_reads += 1
        return self.name


class NonNvmlCudaPlatform(NvmlCudaPlatform):
    """vLLM's CUDA platform without NVML: its device queries go through torch.cuda (a CUDA context)."""

    def get_device_capability(self, device_id=0):
        raise AssertionError("would initialise CUDA")

    get_device_name = get_device_capability


current_platform = NvmlCudaPlatform()
