() => {
  // Gradio's multiselect keeps its list of options open after a pick, over whatever lies below
  // it: on the Data tab that is Save, so a click meant for Save picked another intent (seen:
  // 'atm_support' added to a row labelled by typing its intent and pressing Enter). Every list
  // of options closes once an option is picked, by Enter or by a click; typing opens it again
  // for the next one. (A single-choice list has closed already: nothing to do.)
  if (window.__studioCloseOnPick) return [];
  window.__studioCloseOnPick = true;
  const close = (input) => setTimeout(() => {
    if (!document.getElementById(input.getAttribute('aria-controls'))) return;  // closed
    // bubbling: Svelte hears the key where it delegates its events, above the input
    input.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape', bubbles: true}));
  }, 0);
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && e.target.matches?.('input[role=combobox]')) close(e.target);
  });
  // the pick is made on the press: by the click, the list under the pointer has changed
  document.addEventListener('mousedown', (e) => {
    const list = e.target.closest?.('[role=listbox] [role=option]')?.closest('[role=listbox]');
    const input = list && document.querySelector(`input[aria-controls="${list.id}"]`);
    if (input) return close(input);
    // a press on a field closed that way opens its list again (it kept the focus, and Gradio
    // opens the list when the field gains it)
    const field = e.target.closest?.('input[role=combobox]');
    if (field && field === document.activeElement
        && !document.getElementById(field.getAttribute('aria-controls'))) {
      setTimeout(() => field.dispatchEvent(new FocusEvent('focus')), 0);
    }
  });
  return [];
}
