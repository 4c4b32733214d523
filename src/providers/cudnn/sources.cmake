# The cuDNN provider: cudnn-frontend (header-only) compiled with dynamic loading, so cuDNN 9 is
# dlopen'ed at run time and every binary still starts on a host without it. Only these sources
# see the frontend's headers (it carries its own nlohmann/json, kept apart from kselect's),
# as system headers: their warnings are not ours.
set(KSELECT_CUDNN_SOURCES src/providers/cudnn/cudnn_library.cpp
                          src/providers/cudnn/cudnn_provider.cpp)
set_source_files_properties(${KSELECT_CUDNN_SOURCES} PROPERTIES
    COMPILE_OPTIONS "-isystem;${KSELECT_CUDNN_FRONTEND_INCLUDE}"
    COMPILE_DEFINITIONS "NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING")
