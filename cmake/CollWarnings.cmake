# Warnings for our own targets (not for imported ones), sanitizers for all.
add_library(coll_warnings INTERFACE)
target_compile_options(coll_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wshadow=local -Wno-missing-field-initializers>
  $<$<AND:$<BOOL:${COLL_WERROR}>,$<COMPILE_LANGUAGE:CXX,C>>:-Werror>
  # nvcc: the host compiler's warnings on the .cu files' host code, and
  # nvcc's own (front end, ptxas) as errors with COLL_WERROR.
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-missing-field-initializers>
  $<$<AND:$<BOOL:${COLL_WERROR}>,$<COMPILE_LANGUAGE:CUDA>>:--Werror=all-warnings -Xcompiler=-Werror>)

if(COLL_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(COLL_SANITIZE STREQUAL "thread")
  # GCC warns (-Wtsan) that TSan does not model atomic_thread_fence, which
  # the shm doorbell's Dekker pair uses; the accesses around it are atomics
  # TSan does see, so the warning is silenced rather than -Werror dropped.
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer
                      $<$<AND:$<COMPILE_LANGUAGE:CXX,C>,$<CXX_COMPILER_ID:GNU>>:-Wno-tsan>)
  add_link_options(-fsanitize=thread)
elseif(COLL_SANITIZE)
  message(FATAL_ERROR "COLL_SANITIZE must be address or thread, not '${COLL_SANITIZE}'")
endif()

# coll_target_defaults(target): what every target of ours gets.
function(coll_target_defaults tgt)
  target_link_libraries(${tgt} PRIVATE coll_warnings)
endfunction()
