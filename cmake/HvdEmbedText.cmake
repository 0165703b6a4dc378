# cmake/HvdEmbedText.cmake: writes a C++ file defining `const char NAME[]` with the text of
# a file (the batched-copy kernel's PTX), run as cmake -DIN=... -DOUT=... -DNAME=... -P.
file(READ "${IN}" text)
file(WRITE "${OUT}" "// Generated from ${IN}; do not edit.\nextern const char ${NAME}[];\nconst char ${NAME}[] = R\"hvdtext(${text})hvdtext\";\n")
