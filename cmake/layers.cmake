# Layer targets with enforced dependency direction.
#
# Each layer compiles against an include root of its own that holds links only to the public header
# folders of the layers it may use (itself and those to its left in docs/design.md). A header of a higher
# layer is therefore not found, and a forbidden include fails to compile.

set(LOCKSTEP_LAYER_ROOT ${CMAKE_BINARY_DIR}/layer_include)

# lockstep_layer_includes(target "layer;layer...") gives `target` an include root with only those layers.
function(lockstep_layer_includes target layers)
  set(root ${LOCKSTEP_LAYER_ROOT}/${target})
  file(MAKE_DIRECTORY ${root}/lockstep)
  foreach(layer IN LISTS layers)
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/include/lockstep/${layer} ${root}/lockstep/${layer} SYMBOLIC)
  endforeach()
  target_include_directories(${target} PRIVATE ${root})
endfunction()

# lockstep_layer(name DEPS "lower layers") makes target lockstep_<name> from every .cc under src/<name>/.
function(lockstep_layer name)
  cmake_parse_arguments(L "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cc)
  if(NOT sources)
    set(sources ${PROJECT_SOURCE_DIR}/cmake/empty.cc)  # a layer whose issue has not come yet
  endif()
  add_library(lockstep_${name} STATIC ${sources})
  set(visible ${L_DEPS} ${name})
  list(REMOVE_ITEM visible "")
  lockstep_layer_includes(lockstep_${name} "${visible}")
  foreach(dep IN LISTS L_DEPS)
    target_link_libraries(lockstep_${name} PUBLIC lockstep_${dep})
  endforeach()
endfunction()
