/* The driver-quirk table (backends/vulkan/vk_quirks.c) on made-up device
 * properties, no GPU needed: every entry matches the device and driver it
 * names and no other; wildcards, driver-version edges and a device that
 * reports no driver id (Vulkan 1.1) behave as vk_internal.h says; the table
 * is well formed; known devices get what they should. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "vk_internal.h"

#define KNOWN_OFF                                                                                                 \
    (VKL_FEATURE_FP16 | VKL_FEATURE_INT8_DOT | VKL_FEATURE_COOPMAT | VKL_FEATURE_FUSION | VKL_FEATURE_PRIORITY |  \
     VKL_FEATURE_TIMESTAMPS | VKL_VK_OFF_SUBGROUP_ARITH | VKL_VK_OFF_F64)

static VkPhysicalDeviceProperties props(uint32_t vendor, uint32_t device, uint32_t driver_version) {
    VkPhysicalDeviceProperties p;
    memset(&p, 0, sizeof(p));
    p.vendorID = vendor;
    p.deviceID = device;
    p.driverVersion = driver_version;
    snprintf(p.deviceName, sizeof(p.deviceName), "fake %04x:%04x", vendor, device);
    return p;
}

/* What the table turns off on this device and driver, and its names. */
static uint32_t off_for(uint32_t vendor, uint32_t device, uint32_t driver_id, char *names, size_t cap) {
    VkPhysicalDeviceProperties p = props(vendor, device, 1);
    return vkl_vk_quirks_for(&p, driver_id, NULL, names, cap);
}

static void each_entry_matches_its_own_key(void) {
    for (size_t i = 0; i < vkl_vk_quirk_count; i++) {
        const vkl_vk_quirk *q = &vkl_vk_quirks[i];
        uint32_t device = q->device_id ? q->device_id : 0x1234, driver = q->driver_id ? q->driver_id : 7;
        VkPhysicalDeviceProperties p = props(q->vendor_id, device, q->driver_min);
        CHECKF(vkl_vk_quirk_applies(q, &p, driver), "%s does not match its own key", q->name);
        p.driverVersion = q->driver_max;
        CHECKF(vkl_vk_quirk_applies(q, &p, driver), "%s: not at driver_max", q->name);
        char names[256];
        uint32_t off = vkl_vk_quirks_for(&p, driver, NULL, names, sizeof(names));
        CHECKF((off & q->off) == q->off && strstr(names, q->name), "%s: off 0x%x, names '%s'", q->name, off, names);
        /* and nothing else */
        p.vendorID = q->vendor_id + 1;
        CHECKF(!vkl_vk_quirk_applies(q, &p, driver), "%s matches another vendor", q->name);
        p.vendorID = q->vendor_id;
        if (q->device_id) {
            p.deviceID = q->device_id + 1;
            CHECKF(!vkl_vk_quirk_applies(q, &p, driver), "%s matches another device", q->name);
            p.deviceID = device;
        }
        if (q->driver_id) {
            CHECKF(!vkl_vk_quirk_applies(q, &p, q->driver_id + 1), "%s matches another driver", q->name);
            CHECKF(!vkl_vk_quirk_applies(q, &p, 0), "%s matches a device that reports no driver id", q->name);
        }
        if (q->driver_max < UINT32_MAX) {
            p.driverVersion = q->driver_max + 1;
            CHECKF(!vkl_vk_quirk_applies(q, &p, driver), "%s matches a newer driver", q->name);
        }
        if (q->driver_min > 0) {
            p.driverVersion = q->driver_min - 1;
            CHECKF(!vkl_vk_quirk_applies(q, &p, driver), "%s matches an older driver", q->name);
        }
    }
}

static void table_is_well_formed(void) {
    for (size_t i = 0; i < vkl_vk_quirk_count; i++) {
        const vkl_vk_quirk *q = &vkl_vk_quirks[i];
        CHECKF(q->name && *q->name && q->reason && *q->reason && q->symptom && *q->symptom,
               "entry %zu lacks a name, reason or symptom", i);
        CHECKF(q->vendor_id && q->off && !(q->off & ~KNOWN_OFF), "%s: vendor 0x%x, off 0x%x", q->name, q->vendor_id,
               q->off);
        CHECKF(q->driver_min <= q->driver_max, "%s: driver range [%u, %u]", q->name, q->driver_min, q->driver_max);
        for (size_t j = 0; j < i; j++) CHECKF(strcmp(q->name, vkl_vk_quirks[j].name), "%s twice", q->name);
    }
}

/* An entry with every key set: edges of the range, the device, the driver. */
static void keys_and_edges(void) {
    const vkl_vk_quirk q = {"t", 0x5143, 0x6030001, VK_DRIVER_ID_QUALCOMM_PROPRIETARY, 100, 200, VKL_FEATURE_FP16,
                            "r", "s"};
    VkPhysicalDeviceProperties p = props(0x5143, 0x6030001, 100);
    CHECK(vkl_vk_quirk_applies(&q, &p, VK_DRIVER_ID_QUALCOMM_PROPRIETARY));
    p.driverVersion = 200;
    CHECK(vkl_vk_quirk_applies(&q, &p, VK_DRIVER_ID_QUALCOMM_PROPRIETARY));
    p.driverVersion = 99;
    CHECK(!vkl_vk_quirk_applies(&q, &p, VK_DRIVER_ID_QUALCOMM_PROPRIETARY));
    p.driverVersion = 201;
    CHECK(!vkl_vk_quirk_applies(&q, &p, VK_DRIVER_ID_QUALCOMM_PROPRIETARY));
    p.driverVersion = 150;
    CHECK(!vkl_vk_quirk_applies(&q, &p, VK_DRIVER_ID_MESA_TURNIP));
    CHECK(!vkl_vk_quirk_applies(&q, &p, 0));
    p.deviceID = 0x6040001;
    CHECK(!vkl_vk_quirk_applies(&q, &p, VK_DRIVER_ID_QUALCOMM_PROPRIETARY));
    /* wildcards: any device, any driver (a Vulkan 1.1 device's 0 included) */
    const vkl_vk_quirk any = {"any", 0x5143, 0, 0, 0, UINT32_MAX, VKL_FEATURE_FP16, "r", "s"};
    CHECK(vkl_vk_quirk_applies(&any, &p, 0) && vkl_vk_quirk_applies(&any, &p, VK_DRIVER_ID_MESA_TURNIP));
    p.vendorID = 0x13b5;
    CHECK(!vkl_vk_quirk_applies(&any, &p, 0));
}

/* Devices whose answer is known: what the table's sources name, and the
 * devices CI and the GPU machine run on, which no entry may touch. */
static void known_devices(void) {
    char names[256];
    CHECK(off_for(0x10005, 0, VK_DRIVER_ID_MESA_LLVMPIPE, names, sizeof(names)) == 0 && !names[0]);
    CHECK(off_for(0x10de, 0x2330, VK_DRIVER_ID_NVIDIA_PROPRIETARY, names, sizeof(names)) == 0 && !names[0]);
    CHECK(off_for(0x1002, 0x731f, VK_DRIVER_ID_MOLTENVK, names, sizeof(names)) == VKL_VK_OFF_SUBGROUP_ARITH);
    CHECK(strstr(names, "amd-moltenvk-subgroup (subgroup arithmetic off)") != NULL);
    CHECK(off_for(0x1002, 0x731f, VK_DRIVER_ID_MESA_RADV, names, sizeof(names)) == 0);
    CHECK(off_for(0x1002, 0x744c, VK_DRIVER_ID_AMD_PROPRIETARY, names, sizeof(names)) == VKL_FEATURE_COOPMAT);
    CHECK(off_for(0x1002, 0x744c, VK_DRIVER_ID_AMD_OPEN_SOURCE, names, sizeof(names)) == VKL_FEATURE_COOPMAT);
    CHECK(off_for(0x8086, 0x56a0, VK_DRIVER_ID_INTEL_OPEN_SOURCE_MESA, names, sizeof(names)) == VKL_FEATURE_COOPMAT);
    CHECK(off_for(0x8086, 0x56a0, 0, names, sizeof(names)) == VKL_FEATURE_COOPMAT);
    CHECK(off_for(0x1010, 0x22102, 0, names, sizeof(names)) == VKL_FEATURE_FP16);
    CHECK(strstr(names, "powervr-fp16 (fp16 off)") != NULL);
}

static void off_names(void) {
    char buf[128];
    vkl_vk_off_names(VKL_FEATURE_COOPMAT | VKL_VK_OFF_SUBGROUP_ARITH | VKL_VK_OFF_F64, buf, sizeof(buf));
    CHECKF(!strcmp(buf, "coopmat, subgroup arithmetic, f64"), "'%s'", buf);
    vkl_vk_off_names(0, buf, sizeof(buf));
    CHECK(!buf[0]);
    char tiny[8]; /* truncated, never overrun */
    vkl_vk_off_names(KNOWN_OFF, tiny, sizeof(tiny));
    CHECK(strlen(tiny) < sizeof(tiny));
}

int main(void) {
    each_entry_matches_its_own_key();
    table_is_well_formed();
    keys_and_edges();
    known_devices();
    off_names();
    return check_finish("test_vk_quirks");
}
