# Cross build for 64-bit Arm Linux with Debian's cross compiler
# (gcc-aarch64-linux-gnu, libc6-dev-arm64-cross: libc in the sysroot
# /usr/aarch64-linux-gnu) and arm64 libraries from Debian multiarch
# (libprotobuf-c-dev:arm64 etc. in /usr/lib/aarch64-linux-gnu; scripts/setup).
# Programs that run at build time (protoc-c) are the host's. ctest runs the
# test programs under qemu-user, `-cpu max` so that sdot and smmla exist.
# Usage: cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# (scripts/test-aarch64 does it all).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
# gcc by default; -DCMAKE_C_COMPILER=clang works too (the target below, and
# the cross gcc's startup files and libgcc, which clang finds itself).
if(NOT CMAKE_C_COMPILER)
  set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
endif()
set(CMAKE_C_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(VKL_AARCH64_SYSROOT /usr/aarch64-linux-gnu)
# qemu's -L makes the sysroot's ld.so the program interpreter, but that
# ld.so also searches /lib/aarch64-linux-gnu, where multiarch's libc6:arm64
# (a dependency of every :arm64 library) lies: a libc of another build
# than the ld.so, with which pthread_create hangs. LD_LIBRARY_PATH puts the
# sysroot's libc first; the other libraries come from multiarch.
set(VKL_QEMU_AARCH64_ARGS -L ${VKL_AARCH64_SYSROOT} -E LD_LIBRARY_PATH=${VKL_AARCH64_SYSROOT}/lib)
find_program(VKL_QEMU_AARCH64 qemu-aarch64)
if(VKL_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${VKL_QEMU_AARCH64} -cpu max ${VKL_QEMU_AARCH64_ARGS})
endif()

# Libraries and headers: the cross sysroot and the multiarch directories
# (the compiler searches both itself); programs: the host's.
set(CMAKE_FIND_ROOT_PATH ${VKL_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# pkg-config reads the arm64 .pc files only (Debian has no
# aarch64-linux-gnu-pkg-config wrapper in bookworm's pkg-config).
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
unset(ENV{PKG_CONFIG_PATH})

# No arm64 Vulkan loader or driver is installed for the tests to run on, so
# the Vulkan backend is off unless asked for.
set(VKL_VULKAN OFF CACHE BOOL "Build the Vulkan backend (needs Vulkan headers, volk and glslc)")
