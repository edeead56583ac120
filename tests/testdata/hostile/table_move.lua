-- hostile: a C loop in table.move over 2^50 elements
return table.move({}, 1, 1 << 50, 2)
