# docs/architecture.md against the tree: every src/ folder (src/<box>/ and one level below it, as
# src/providers/<name>/) and every public header (include/kselect/*.h) must appear on the page, and
# every src/ folder or header the page names must exist. Run as
#   cmake -DSOURCE_DIR=<repository root> -P tests/docs/architecture_doc_test.cmake
# A folder counts as named when the page holds "src/<folder>/" (with the trailing slash, so
# src/provider/ is not found inside src/providers/); a header when its file name appears as a whole
# word ("model.h" is not found inside "foreign_model.h").

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "architecture_doc_test: pass the repository root with -DSOURCE_DIR=...")
endif()
set(doc_path "${SOURCE_DIR}/docs/architecture.md")
if(NOT EXISTS "${doc_path}")
  message(FATAL_ERROR "architecture_doc_test: ${doc_path} does not exist")
endif()
file(READ "${doc_path}" doc)
# A leading newline lets the word-boundary patterns below match at the very start of the page.
set(doc "\n${doc}\n")

set(problems "")

# 1. Every src/ folder has a box.
file(GLOB level1 LIST_DIRECTORIES true RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/src/*")
file(GLOB level2 LIST_DIRECTORIES true RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/src/*/*")
set(src_folders "")
foreach(rel IN LISTS level1 level2)
  if(IS_DIRECTORY "${SOURCE_DIR}/${rel}")
    list(APPEND src_folders "${rel}")
  endif()
endforeach()
list(SORT src_folders)
if(NOT src_folders)
  message(FATAL_ERROR "architecture_doc_test: no folders under ${SOURCE_DIR}/src (wrong SOURCE_DIR?)")
endif()
foreach(rel IN LISTS src_folders)
  string(FIND "${doc}" "${rel}/" at)
  if(at EQUAL -1)
    string(APPEND problems
           "  folder ${rel}/ exists but docs/architecture.md does not name it: add its box\n")
  endif()
endforeach()

# 2. Every public header is named.
file(GLOB public_headers RELATIVE "${SOURCE_DIR}/include/kselect"
     "${SOURCE_DIR}/include/kselect/*.h")
list(SORT public_headers)
if(NOT public_headers)
  message(FATAL_ERROR "architecture_doc_test: no headers in ${SOURCE_DIR}/include/kselect")
endif()
foreach(header IN LISTS public_headers)
  string(REPLACE "." "\\." pattern "${header}")
  if(NOT doc MATCHES "[^A-Za-z0-9_]${pattern}[^A-Za-z0-9_]")
    string(APPEND problems "  public header include/kselect/${header} exists but "
                           "docs/architecture.md does not name it: add it to its box\n")
  endif()
endforeach()

# 3. Every src/ folder the page names exists. A path such as src/providers/<name>/x.cpp names
# the folders up to the first part that is not a plain name (here src/providers/).
string(REGEX MATCHALL "[^A-Za-z0-9_./-]src/[^ \t\r\n`'\"(),;|*{}]*" src_paths "${doc}")
set(named_folders "")
foreach(token IN LISTS src_paths)
  string(REGEX MATCH "src/.*" token "${token}")
  string(REGEX MATCH "^src/([A-Za-z0-9_]+/)*" folder "${token}")
  if(folder AND NOT folder STREQUAL "src/")
    list(APPEND named_folders "${folder}")
  endif()
endforeach()
list(REMOVE_DUPLICATES named_folders)
list(SORT named_folders)
foreach(folder IN LISTS named_folders)
  if(NOT IS_DIRECTORY "${SOURCE_DIR}/${folder}")
    string(APPEND problems
           "  docs/architecture.md names ${folder}, which does not exist: remove or correct it\n")
  endif()
endforeach()

# 4. Every header the page names exists: a public header, or an internal or provider header
# somewhere under src/. Placeholders such as <name>_config.h are not names.
string(REGEX REPLACE "<[A-Za-z_]+>[A-Za-z0-9_]*\\.h" "" doc_no_placeholders "${doc}")
string(REGEX MATCHALL "[^A-Za-z0-9_.<>-][A-Za-z0-9_]+\\.h[^A-Za-z0-9_]" header_tokens
       "${doc_no_placeholders}")
file(GLOB_RECURSE src_headers RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/src/*.h")
set(src_header_names "")
foreach(path IN LISTS src_headers)
  get_filename_component(name "${path}" NAME)
  list(APPEND src_header_names "${name}")
endforeach()
set(named_headers "")
foreach(token IN LISTS header_tokens)
  string(REGEX MATCH "[A-Za-z0-9_]+\\.h" name "${token}")
  if(name)
    list(APPEND named_headers "${name}")
  endif()
endforeach()
list(REMOVE_DUPLICATES named_headers)
list(SORT named_headers)
foreach(name IN LISTS named_headers)
  list(FIND public_headers "${name}" in_public)
  list(FIND src_header_names "${name}" in_src)
  if(in_public EQUAL -1 AND in_src EQUAL -1)
    string(APPEND problems "  docs/architecture.md names header ${name}, which is neither in "
                           "include/kselect/ nor under src/: remove or correct it\n")
  endif()
endforeach()

if(problems)
  message(FATAL_ERROR "docs/architecture.md does not match the tree:\n${problems}")
endif()
list(LENGTH src_folders folder_count)
list(LENGTH public_headers header_count)
message(STATUS "docs/architecture.md names all ${folder_count} src/ folders and all "
               "${header_count} public headers, and nothing that does not exist")
