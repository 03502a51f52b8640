{
  "targets": [
    {
      "target_name": "gjc_session_store",
      "cflags_cc": ["-std=c++17", "-Wall", "-Wextra", "-fvisibility=hidden"],
      "cflags_cc!": ["-std=gnu++17"],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "sources": [
        "native/binding/addon.cc",
        "native/core/acl_bytes.cc",
        "native/core/names.cc",
        "native/core/portable.cc"
      ],
      "conditions": [
        ["OS=='linux'", {
          "sources": [
            "native/core/posix/posix_util.cc",
            "native/core/posix/walk.cc",
            "native/core/posix/io.cc",
            "native/core/posix/remove_tree.cc",
            "native/core/linux/acl_linux.cc",
            "native/core/linux/os_linux.cc"
          ]
        }],
        ["OS=='mac'", {
          "sources": [
            "native/core/posix/posix_util.cc",
            "native/core/posix/walk.cc",
            "native/core/posix/io.cc",
            "native/core/posix/remove_tree.cc",
            "native/core/darwin/acl_darwin.cc",
            "native/core/darwin/os_darwin.cc"
          ],
          "xcode_settings": {
            "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
            "MACOSX_DEPLOYMENT_TARGET": "11.0",
            "GCC_ENABLE_CPP_EXCEPTIONS": "NO"
          }
        }],
        ["OS=='win'", {
          "sources": [
            "native/core/win32/win_util.cc",
            "native/core/win32/paths.cc",
            "native/core/win32/security.cc",
            "native/core/win32/walk.cc",
            "native/core/win32/io.cc",
            "native/core/win32/remove_tree.cc"
          ],
          "defines": ["WIN32_LEAN_AND_MEAN", "NOMINMAX", "UNICODE", "_UNICODE"],
          "libraries": ["advapi32.lib"],
          "msvs_settings": { "VCCLCompilerTool": { "AdditionalOptions": ["/std:c++17"] } }
        }]
      ]
    },
    {
      "target_name": "gjc_pinned_vfs",
      "conditions": [
        ["OS=='linux'", {
          "type": "shared_library",
          "product_prefix": "",
          "sources": ["native/sqlite/pinned_vfs.c"],
          "include_dirs": ["native/sqlite/include"],
          "cflags": ["-Wall", "-Wextra", "-fvisibility=hidden"]
        }, {
          "type": "none"
        }]
      ]
    }
  ]
}
