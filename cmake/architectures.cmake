# Which GPU architectures to compile device code for.
#
# - Set CMAKE_CUDA_ARCHITECTURES yourself (or use a preset) and it is used as given.
# - Otherwise, when a GPU is visible (nvidia-smi answers), compile for exactly that GPU;
#   Hopper gets "90a" so that the sm_90a-only instructions (wgmma, setmaxnreg) are allowed.
# - Otherwise (CI, laptops without a GPU) compile for the course's targets, Ampere and Hopper
#   (90a, so that the Hopper-only kernels of Days 9-12 compile and their SASS is checked).
set(COURSE_DEFAULT_CUDA_ARCHITECTURES "80;90a" CACHE STRING
    "Architectures used when no GPU is visible and CMAKE_CUDA_ARCHITECTURES is not set")

function(course_choose_cuda_architectures)
  if(DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "")
    if(NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "auto")
      return()
    endif()
  endif()
  set(detected "")
  find_program(COURSE_NVIDIA_SMI nvidia-smi)
  if(COURSE_NVIDIA_SMI)
    execute_process(COMMAND ${COURSE_NVIDIA_SMI} --query-gpu=compute_cap --format=csv,noheader
                    OUTPUT_VARIABLE caps RESULT_VARIABLE rc ERROR_QUIET TIMEOUT 20)
    if(rc EQUAL 0 AND caps MATCHES "^[ \t\r\n]*([0-9]+)\\.([0-9]+)")
      set(detected "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
      if(detected STREQUAL "90")
        set(detected "90a")
      endif()
    endif()
  endif()
  if(detected STREQUAL "")
    set(detected "${COURSE_DEFAULT_CUDA_ARCHITECTURES}")
    message(STATUS "course: no GPU visible; compiling device code for ${detected}")
  else()
    message(STATUS "course: GPU visible; compiling device code for sm_${detected}")
  endif()
  set(CMAKE_CUDA_ARCHITECTURES "${detected}" CACHE STRING "CUDA architectures" FORCE)
endfunction()
